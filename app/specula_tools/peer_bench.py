"""Specula beside llama.cpp's ``llama-server``, side by side, in one run.

    python -m specula_tools.peer_bench --llama-server PATH/llama-server \\
        --target T.gguf --draft D.gguf --threads 1 --max-tokens 96 --repeat 3 \\
        --modes plain,adaptive,chain:3 --peer-draft-max 3,8 [--prompts FILE] [--limit 4]

    python -m specula_tools.peer_bench --llama-server PATH/llama-server \\
        --target T-with-MTP.gguf --modes plain,mtp,adaptive --peer-draft-max "" --peer-mtp-max 1,3

    python -m specula_tools.peer_bench --llama-server PATH/llama-server \\
        --target T.gguf --head EAGLE3-HEAD.gguf --modes plain,eagle3 --peer-draft-max "" --peer-head-max 3

Starts llama-server without a draft, llama-server with the draft once per
``--peer-draft-max`` (``-md D --spec-type draft-simple --spec-draft-n-max K``:
``-md`` alone loads the draft but enables no drafter), llama-server drafting with
the target's own MTP layers once per ``--peer-mtp-max`` (``--spec-type draft-mtp``),
llama-server drafting with a draft head once per ``--peer-head-max`` (``-md HEAD --spec-type
draft-eagle3 | draft-dflash | draft-dspark``, the kind read from the head's header),
and one ``specula serve`` (with ``--head``: serving with the head, modes ``eagle3`` ...)
whose mode is chosen per request. Every server answers the same streamed chat
request for each prompt, sides rotating from prompt to prompt (greedy; each timed
request follows an untimed one-token request with another prompt, so no side
reuses the previous side's prefill). It prints per prompt each side's decode
tok/s (the server's own figure), TTFT and wall time (the client's), acceptance,
whether the text is llama-server's, and the ratios (``specula.core.bench.peer``).

Pinning is the caller's: run the whole tool under ``taskset`` and every server
inherits the CPU set. ``--no-repack`` (the default on CPU) turns llama.cpp's weight
repacking off in every server (``-nr``; ``SPECULA_CPU_EXTRA_BUFFERS=0``). On a GPU
pass ``--gpu-layers -1`` (and ``--draft-gpu-layers -1``): nothing else changes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from specula.core.bench import load_prompts
from specula.core.bench.peer import PEER_PLAIN, PeerRun, format_table, read_stream, rows, to_json

LOAD_TIMEOUT_S = 900.0  # an F16 target on one core takes a while to load and warm up


@dataclass
class Side:
    """One column: a server and what each request asks of it."""

    name: str
    server: Server
    extra: dict[str, object]


class Server:
    """A server process on a free local port, stopped on exit."""

    def __init__(self, label: str, argv: list[str], env: dict[str, str] | None = None,
                 log_dir: Path | None = None) -> None:
        self.label = label
        self.port = _free_port()
        argv = [*argv, "--host", "127.0.0.1", "--port", str(self.port)]
        self.log_path = log_dir / f"{label.replace(' ', '_').replace(':', '-')}.log" if log_dir else None
        with (open(self.log_path, "wb") if self.log_path else contextlib.nullcontext()) as log:
            # the child keeps its own copy of the file descriptor
            self.proc = subprocess.Popen(argv, stdout=log or subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        self.model = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = LOAD_TIMEOUT_S) -> None:
        """Until /v1/models lists a model (llama-server answers 503 while it loads)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode} while loading")
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=5) as resp:
                    data = json.loads(resp.read()).get("data") or []
                    if data:
                        self.model = str(data[0].get("id", ""))
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.label} was not ready within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clock() -> Iterator[float]:
    while True:
        yield time.perf_counter()


def ask(side: Side, messages: list[dict[str, str]], max_tokens: int, prompt_id: str,
        repeat: int, timeout: float = 3600.0) -> PeerRun:
    """One greedy streamed chat request, timed by the client."""
    body = {"model": side.server.model, "messages": messages, "max_tokens": max_tokens,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True},
            **side.extra}
    req = urllib.request.Request(side.server.url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    sent = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return read_stream(resp, sent, _clock(), side.name, prompt_id, repeat)


# What a Specula side's flush asks: a fixed chain, so that the draft is fed the flush's
# prompt too (a plain or paused reply never feeds it, and a one-token reply ends before
# the draft's catch-up, which comes after the first token).
FLUSH_SPECULA = {"specula": {"mode": "chain", "draft_max": 1}}


def flush(side: Side) -> None:
    """An untimed short reply to another prompt, so that the timed one finds neither the
    target's cache nor the draft's holding it (each side starts as a new question does).
    Specula's sides share one server: without this, a side asked right after another
    drafting side found the draft already fed the prompt, and its catch-up (0.6 s of an
    11 s F16 reply) was free where the other side's was not."""
    extra = FLUSH_SPECULA if "specula" in side.extra else side.extra
    body = {"model": side.server.model, "messages": [{"role": "user", "content": "ok"}],
            "max_tokens": 3, "temperature": 0.0, **extra}
    req = urllib.request.Request(side.server.url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        resp.read()


def _specula_modes(text: str) -> list[tuple[str, dict[str, object]]]:
    """'plain,adaptive,chain:3' -> [(side name, the request's "specula" field)]."""
    out = []
    for item in [m.strip() for m in text.split(",") if m.strip()]:
        mode, _, k = item.partition(":")
        if mode not in ("plain", "adaptive", "chain", "tree", "lookup", "mtp", "eagle3", "dflash", "dspark"):
            raise ValueError(f"unknown Specula mode {mode!r}")
        field: dict[str, object] = {"mode": mode}
        if k:
            field["draft_max"] = int(k)
        out.append((f"specula {item}", {"specula": field}))
    return out


def _ints(text: str) -> list[int]:
    """'3,8' -> [3, 8]; '' -> []."""
    return [int(x) for x in text.split(",") if x.strip()]


def _head_kind(path: str) -> str:
    """eagle3, dflash or dspark, from the head's header (ValueError when it is no head)."""
    from specula.core.gguf.draft_head import read_head_info
    from specula.core.gguf.model_info import GGUFError

    try:
        return read_head_info(path).kind
    except GGUFError as exc:
        raise ValueError(str(exc)) from exc


def build_sides(a: argparse.Namespace, log_dir: Path) -> tuple[list[Side], list[Server]]:
    threads = str(a.threads)
    common = ["-m", a.target, "-t", threads, "-tb", threads, "-c", str(a.ctx), "-np", "1",
              "-ngl", str(a.gpu_layers)]
    if a.no_repack:
        common.append("-nr")
    servers: list[Server] = []
    sides: list[Side] = []
    peer = Server(PEER_PLAIN, [a.llama_server, *common], log_dir=log_dir)
    servers.append(peer)
    sides.append(Side(PEER_PLAIN, peer, {"cache_prompt": True}))
    for k in _ints(a.peer_draft_max) if a.draft else []:
        name = f"llama-server draft:{k}"
        srv = Server(name, [a.llama_server, *common, "-md", a.draft, "--spec-type", "draft-simple",
                            "--spec-draft-n-max", str(k), "-ngld", str(a.draft_gpu_layers),
                            "-td", threads], log_dir=log_dir)
        servers.append(srv)
        sides.append(Side(name, srv, {"cache_prompt": True}))
    for k in _ints(a.peer_mtp_max):
        # the target's own MTP (NextN) layers as the draft: no -md
        name = f"llama-server mtp:{k}"
        srv = Server(name, [a.llama_server, *common, "--spec-type", "draft-mtp",
                            "--spec-draft-n-max", str(k)], log_dir=log_dir)
        servers.append(srv)
        sides.append(Side(name, srv, {"cache_prompt": True}))
    head_kind = _head_kind(a.head) if a.head else ""
    for k in _ints(a.peer_head_max) if a.head else []:
        # a draft head (EAGLE-3, DFlash, DSpark): llama-server needs its --spec-type (an
        # EAGLE-3 head given without it loads and silently drafts nothing)
        name = f"llama-server {head_kind}:{k}"
        srv = Server(name, [a.llama_server, *common, "-md", a.head, "--spec-type", f"draft-{head_kind}",
                            "--spec-draft-n-max", str(k), "-ngld", str(a.draft_gpu_layers)],
                     log_dir=log_dir)
        servers.append(srv)
        sides.append(Side(name, srv, {"cache_prompt": True}))
    env = {"SPECULA_HOME": a.specula_home or tempfile.mkdtemp(prefix="specula-peer-")}
    if a.no_repack:
        env["SPECULA_CPU_EXTRA_BUFFERS"] = "0"
    # Specula's server teaches the target's n-gram cache every reply; the same prompt asked
    # once per side would let a later side's lookup copy an earlier side's reply, which no
    # user sees (llama-server keeps no such cache), so it learns nothing unless asked.
    boot = "import sys; from specula.cli import main; sys.exit(main())"
    if not a.learn_ngrams:
        boot = ("from specula.core.engine.drafters.ngram_store import NgramStore; "
                "NgramStore.learn_reply = lambda self, tokens: None; " + boot)
    spec = Server("specula", [sys.executable, "-c", boot,
                              "serve", "--model", a.target,
                              *(["--draft", a.head or a.draft] if a.head or a.draft else []),
                              "--threads", threads, "--ctx", str(a.ctx), "--gpu-layers", str(a.gpu_layers),
                              "--draft-gpu-layers", str(a.draft_gpu_layers)], env=env, log_dir=log_dir)
    servers.append(spec)
    for name, extra in _specula_modes(a.modes):
        sides.append(Side(name, spec, extra))
    return sides, servers


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--llama-server", required=True, help="path to llama.cpp's llama-server binary")
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", help="the draft model (none: only the target's MTP layers can draft)")
    ap.add_argument("--prompts", help="JSONL prompts (default: the packaged suite)")
    ap.add_argument("--ids", help="only these prompt ids (comma-separated)")
    ap.add_argument("--limit", type=int, help="only the first N prompts")
    ap.add_argument("--modes", default="plain,adaptive,chain:3", help="Specula's sides")
    ap.add_argument("--peer-draft-max", default="3,8",
                    help="llama-server draft settings (--spec-draft-n-max), one server each")
    ap.add_argument("--peer-mtp-max", default="",
                    help="llama-server MTP settings (--spec-type draft-mtp --spec-draft-n-max K), "
                         "one server each; needs a target with MTP (NextN) layers")
    ap.add_argument("--head", help="a draft head (EAGLE-3, DFlash, DSpark) for the target: Specula "
                                   "serves with it (modes eagle3 / dflash / dspark) instead of --draft")
    ap.add_argument("--peer-head-max", default="3",
                    help="with --head: llama-server settings (-md HEAD --spec-type draft-<kind> "
                         "--spec-draft-n-max K), one server each")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--gpu-layers", type=int, default=0)
    ap.add_argument("--draft-gpu-layers", type=int, default=0)
    ap.add_argument("--repack", dest="no_repack", action="store_false",
                    help="let llama.cpp repack weights (off by default: -nr on every server)")
    ap.add_argument("--specula-home", help="Specula's data folder (default: a fresh one: a first session)")
    ap.add_argument("--learn-ngrams", action="store_true",
                    help="let Specula's n-gram cache learn from the replies (then a later side may copy "
                         "an earlier side's reply to the same prompt); off by default")
    ap.add_argument("--json", dest="json_out", help="write every run and the table here")
    ap.add_argument("--logs", help="folder for the servers' logs (default: a temporary one)")
    a = ap.parse_args(argv)
    for path in (a.llama_server, a.target, a.draft, a.head):
        if path is not None and not Path(path).exists():
            ap.error(f"{path} does not exist")
    if a.head:
        try:
            _head_kind(a.head)
        except ValueError as exc:
            ap.error(str(exc))
    try:
        prompts = load_prompts(a.prompts)
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    if a.ids:
        wanted = [x.strip() for x in a.ids.split(",")]
        prompts = [p for i in wanted for p in prompts if p.id == i]
    if a.limit:
        prompts = prompts[: a.limit]
    if not prompts:
        ap.error("no prompts to run")
    log_dir = Path(a.logs or tempfile.mkdtemp(prefix="peer-bench-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    sides, servers = build_sides(a, log_dir)
    runs: list[PeerRun] = []
    try:
        for srv in servers:
            srv.wait_ready()
        print(f"servers ready (logs in {log_dir}); {len(prompts)} prompts x {len(sides)} sides x "
              f"{a.repeat}, max {a.max_tokens} tokens, greedy", file=sys.stderr)
        for side in sides:  # warm-up: threads, allocations, the first decode of each shape
            flush(side)
            ask(side, prompts[0].messages, 8, "warm-up", -1)
        for r in range(a.repeat):
            for i, prompt in enumerate(prompts):
                shift = (i + r) % len(sides)
                for side in [*sides[shift:], *sides[:shift]]:
                    flush(side)
                    run = ask(side, prompt.messages, a.max_tokens, prompt.id, r)
                    runs.append(run)
                    acc = f"{run.acceptance:.0%}" if run.acceptance is not None else "-"
                    fed = run.detail.get("draft_catchup_tokens")
                    print(f"  {prompt.id:<20} {side.name:<26} {run.decode_tok_s:6.2f} tok/s "
                          f"ttft {run.ttft_s * 1000:5.0f} ms  wall {run.wall_s:5.1f} s  accept {acc}"
                          + (f"  draft fed {fed}" if fed else ""), file=sys.stderr)
    finally:
        for srv in servers:
            with contextlib.suppress(Exception):
                srv.stop()
    print(format_table(rows(runs), [s.name for s in sides]))
    if a.json_out:
        setup = {"command": " ".join(sys.argv), "target": a.target, "draft": a.draft,
                 "threads": a.threads, "max_tokens": a.max_tokens, "repeat": a.repeat,
                 "no_repack": a.no_repack, "gpu_layers": a.gpu_layers, "learn_ngrams": a.learn_ngrams}
        Path(a.json_out).write_text(json.dumps(to_json(runs, setup), indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
