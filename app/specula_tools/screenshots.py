"""Screenshots of the app's pages, by name, at the window sizes asked for.

Run from the repository root::

    PYTHONPATH=app python -m specula_tools.screenshots docs/screenshots \\
        --pair real --size 1024x700 --size 1600x1000 --pages chat,discover,models

``--pair tiny`` (the default) builds tiny GGUF models (a "7B" target and
smaller siblings sharing its tokenizer); ``--pair real`` takes the Qwen2.5-Coder
1.5B target and 0.5B draft (and Gemma 270M, another tokenizer) from
``~/.cache/specula-bench`` (or ``SPECULA_BENCH_DIR``), memory-mapped, never
copied. Either way the models are served by the repository's local fake hub
(``tests/fixtures/fake_hub.py``, the one the tests use) under repositories
named as on huggingface.co, and their folder is added to the library as an
extra folder, so Discover, My Models and Downloads show real listings with
no network. The app runs offscreen (unless a display is set) in a throw-away
SPECULA_HOME, with the real engine: it loads the pair, sends a message, runs
a comparison, leaves one download paused and one running, and writes
``<prefix><page>-<W>x<H>.png`` for every page and size.
"""

from __future__ import annotations

import argparse
import hashlib
import mmap
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

PAGES = ("chat", "compare", "discover", "discover-repo", "models", "downloads", "settings",
         "server", "chat-paused", "failed-load")
# server: the chat page with the local server's chip open on its log; chat-paused: the chat
# with the header saying adaptive paused drafting (its longest words, a verdict re-checked
# in 128 replies, set on the header); failed-load: the chat after a target that does not
# load (a copy of the target cut short), the old pair still loaded
PROMPT = "Write a Python function that checks whether a string is a palindrome."
BENCH = Path(os.environ.get("SPECULA_BENCH_DIR", Path.home() / ".cache/specula-bench"))


@dataclass
class Served:
    """The pair to load and the hub that serves the models' repositories."""

    hub: Any  # tests.fixtures.fake_hub.FakeHub
    folder: Path  # the models, indexed in place as an extra library folder
    target: Path
    draft: Path
    target_repo: str
    download: tuple[str, str]  # a file to leave downloading (repo id, file name)
    paused: tuple[str, str]  # a file to leave paused


def _fake_hub() -> Any:
    try:
        from tests.fixtures import fake_hub
    except ImportError as exc:  # the tool serves the repository's own fake hub
        raise SystemExit("run from the repository root (the fake hub is tests/fixtures/)") from exc
    return fake_hub


def _disk_file(path: Path) -> Any:
    """A served file backed by a memory map; its sha256 computed once, when asked."""
    fake_hub = _fake_hub()

    class DiskFile(fake_hub.FakeFile):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            with path.open("rb") as fh:
                super().__init__(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
            self._sha: str | None = None
            self._lock = threading.Lock()

        @property
        def sha256(self) -> str:
            with self._lock:
                if self._sha is None:
                    self._sha = hashlib.sha256(self.data).hexdigest()
                return self._sha

        @property
        def git_oid(self) -> str:
            return hashlib.sha1(self.sha256.encode()).hexdigest()

    return DiskFile()


def serve_real() -> Served:
    q15, q05 = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    gemma = "gemma-3-270m-q4_k_m.gguf"
    missing = [n for n in (q15, q05, gemma) if not (BENCH / n).is_file()]
    if missing:
        raise SystemExit(f"missing in {BENCH}: {', '.join(missing)}")
    hub = _fake_hub().FakeHub().start()
    repos = {"Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF": (q15, 48_213, 96),
             "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF": (q05, 31_877, 64),
             "ggml-org/gemma-3-270m-GGUF": (gemma, 12_480, 41)}
    for repo_id, (name, downloads, likes) in repos.items():
        hub.add_repo(repo_id, {name: _disk_file(BENCH / name),
                               "README.md": f"# {repo_id}\n\nGGUF files of {name}.\n".encode()},
                     downloads=downloads, likes=likes)
    return Served(hub, BENCH, BENCH / q15, BENCH / q05, "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
                  ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", q05), ("ggml-org/gemma-3-270m-GGUF", gemma))


def serve_tiny(work: Path) -> Served:
    from specula_tools.tiny_models import OTHER, TARGET, build_tiny_model

    folder = work / "tiny"
    specs = {  # (repo, file, spec): sizes named like real models, ordered like them
        "big": ("specula-test/Tiny-Coder-7B-Instruct-GGUF", "tiny-coder-7b-instruct-q4_k_m.gguf",
                replace(TARGET, name="Tiny-Coder-7B-Instruct", n_embd=128, n_head=4, n_head_kv=2,
                        n_layers=4, n_ff=256)),
        "small": ("specula-test/Tiny-Coder-0.5B-Instruct-GGUF", "tiny-coder-0.5b-instruct-q4_k_m.gguf",
                  replace(TARGET, name="Tiny-Coder-0.5B-Instruct", n_embd=32, n_head=4,
                          n_head_kv=2, n_layers=1, n_ff=64)),
        "medium": ("specula-test/Tiny-Coder-1.5B-Instruct-GGUF",
                   "tiny-coder-1.5b-instruct-q8_0.gguf",
                   replace(TARGET, name="Tiny-Coder-1.5B-Instruct", n_embd=64, n_layers=2)),
        "zebra": ("other-org/Zebra-0.5B-GGUF", "zebra-0.5b-q4_k_m.gguf",
                  replace(OTHER, name="Zebra-0.5B", n_embd=32, n_layers=1, n_ff=64)),
    }
    hub = _fake_hub().FakeHub().start()
    paths = {}
    for i, (key, (repo, name, spec)) in enumerate(specs.items()):
        paths[key] = build_tiny_model(folder / name, spec)
        hub.add_repo(repo, {name: paths[key], "README.md": f"# {spec.name}\n".encode()},
                     downloads=1000 - 100 * i, likes=10 - i)
    return Served(hub, folder, paths["big"], paths["small"], specs["big"][0],
                  specs["medium"][:2], specs["zebra"][:2])


def _size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m specula_tools.screenshots",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("out", nargs="?", default="docs/screenshots")
    p.add_argument("--pair", choices=("tiny", "real"), default="tiny")
    p.add_argument("--size", action="append", type=_size, metavar="WxH",
                   help="window size (repeatable; default 1024x700 and 1600x1000)")
    p.add_argument("--pages", default=",".join(PAGES), help=f"comma-separated: {', '.join(PAGES)}")
    p.add_argument("--prefix", default="", help="prefix of the PNG names")
    p.add_argument("--prompt", default=PROMPT)
    p.add_argument("--max-tokens", type=int, default=120)
    p.add_argument("--mode", help="the chat's speculative mode (chain, adaptive, tree, lookup; "
                   "default: the app's own)")
    p.add_argument("--with-unreadable", action="store_true",
                   help="put a file that is not a GGUF model in the models folder (My Models "
                        "lists it greyed with its reason)")
    args = p.parse_args(argv)
    args.size = args.size or [(1024, 700), (1600, 1000)]
    args.pages = [name.strip() for name in args.pages.split(",") if name.strip()]
    unknown = [name for name in args.pages if name not in PAGES]
    if unknown:
        p.error(f"unknown page {', '.join(unknown)} (one of {', '.join(PAGES)})")
    return args


def _environment(work: Path) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["SPECULA_HOME"] = str(work / "home")
    os.environ["HF_HOME"] = str(work / "hf")
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "SPECULA_MODELS_DIR"):
        os.environ.pop(var, None)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="specula-shots-"))
    _environment(work)
    served = serve_real() if args.pair == "real" else serve_tiny(work)
    os.environ["HF_ENDPOINT"] = served.hub.url

    from specula.core.settings import Settings

    settings = Settings()
    settings.extra_model_dirs = [str(served.folder)]
    settings.generation.max_tokens = args.max_tokens
    if args.mode:
        settings.speculative.mode = args.mode
    settings.save()
    if args.with_unreadable:
        from specula.core.library.scan import resolve_models_dir

        junk = resolve_models_dir(None) / "junk.gguf"
        junk.parent.mkdir(parents=True, exist_ok=True)
        junk.write_bytes(b"this is not a GGUF model" * 40)


    from specula.gui.app import create_window, ensure_qapp
    from specula_tools.qt_waits import Waits

    app = ensure_qapp()

    waits = Waits(app, timeout=600.0, settle_s=0.5)
    wait, settle = waits.wait, waits.settle

    window = create_window(str(served.target), str(served.draft))
    window.show()
    ctx = window.ctx
    wait(lambda: ctx.engine.has_draft and not ctx.library.scanning)
    _prepare(window, served, args, wait)
    for w, h in args.size:
        window.resize(w, h)
        for page in args.pages:
            _show(window, page, served, wait)
            settle()
            path = out / f"{args.prefix}{page}-{w}x{h}.png"
            _grab(window, page).save(str(path))
            least = window.minimumSizeHint()
            print(path, f"(window {window.width()}x{window.height()}, "
                        f"minimum {least.width()}x{least.height()})")
    served.hub.release.set()
    ctx.close()
    served.hub.stop()
    return 0


def _prepare(window: Any, served: Served, args: argparse.Namespace,
             wait: Callable[..., None]) -> None:
    """Content for every page: a reply, a comparison, a paused and a running download."""
    ctx = window.ctx
    if {"chat", "chat-paused", "failed-load"} & set(args.pages):
        done: list[object] = []
        window.chat.reply_finished.connect(done.append)
        window.chat.send(args.prompt)
        wait(lambda: bool(done))
    if "compare" in args.pages:
        compare = window.show_page("compare")
        compare.prompt.setPlainText(args.prompt)
        compared: list[str] = []
        compare.compared.connect(compared.append)
        compare.run()
        wait(lambda: bool(compared))
    if "server" in args.pages:
        _serve_one_request(window, args, wait)
    if "downloads" in args.pages:
        hub, downloads = served.hub, ctx.downloads
        repo, name = served.paused
        size = len(hub.repos[repo].files[name].data)
        hub.stall_after[name] = size // 3
        downloads.start(repo, name)
        wait(lambda: hub.stalled.is_set())
        downloads.pause(repo, name)
        hub.release.set()
        wait(lambda: not downloads.is_running(repo, name))
        hub.stalled, hub.release = threading.Event(), threading.Event()
        repo, name = served.download
        hub.stall_after[name] = len(hub.repos[repo].files[name].data) // 2
        downloads.start(repo, name)
        wait(lambda: hub.stalled.is_set())


def _serve_one_request(window: Any, args: argparse.Namespace, wait: Callable[..., None]) -> None:
    """The app's local server started, and one OpenAI request answered (its log's first line)."""
    import json
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = window.ctx.server
    server.start(port)
    name = window.ctx.engine.target_info.display_name  # the display name is a valid model id
    body = json.dumps({"model": name, "max_tokens": 40,
                       "messages": [{"role": "user", "content": args.prompt}]}).encode()
    done = threading.Event()

    def call() -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            r.read()
        done.set()

    threading.Thread(target=call, daemon=True).start()
    wait(lambda: done.is_set() and len(server.log) > 0)


def _grab(window: Any, page: str) -> Any:
    """The window's pixels; for "server", with the chip's log panel (a popup) drawn over it."""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QPainter

    pixmap = window.grab()
    if page == "server":
        panel = window.chat.model_bar.server_chip.panel
        at = panel.pos() - window.mapToGlobal(QPoint(0, 0))
        painter = QPainter(pixmap)
        painter.drawPixmap(at, panel.grab())
        painter.end()
    return pixmap


def _show(window: Any, page: str, served: Served, wait: Callable[..., None]) -> None:
    """Bring ``page`` up in the state its screenshot shows."""
    chip = window.chat.model_bar.server_chip
    if page != "server" and chip.panel.isVisible():
        chip.panel.hide()
    if page in ("chat-paused", "failed-load"):
        _chat_state(window, page, served, wait)
        return
    if page == "server":
        window.show_page("chat")
        chip.show_log()
        return
    if page in ("discover", "discover-repo"):
        discover = window.show_page("discover")
        if page == "discover":
            discover.search.setText("")
            discover.run_search()
            wait(lambda: discover.suggestions.result is not None
                 and discover.suggestions._task is not None and discover.suggestions._task.done)
            return
        if discover.listing is None or discover.listing.repo_id != served.target_repo:
            discover.search.setText(served.target_repo.split("/")[1].split("-")[0])
            discover.run_search()
            wait(lambda: discover.results_model.rowCount() > 0)
            with_target = [r.repo_id for r in discover.results_model.results]
            discover.results.selectRow(with_target.index(served.target_repo))
            wait(lambda: discover.files_model.rowCount() > 0
                 and discover.files_model.busy_count() == 0)
            wait(lambda: discover.drafts._task is not None and discover.drafts._task.done)
        return
    shown = window.show_page(page)
    if page == "models":
        shown.select_path(str(served.target))
        wait(lambda: shown.details.pairs_status.text().endswith(("for.", "one.")))
    elif page == "downloads":
        shown.select(*served.download)


def _chat_state(window: Any, page: str, served: Served, wait: Callable[..., None]) -> None:
    """The chat with adaptive's pause in the header, or after a target that failed to load."""
    from specula.core.engine.verdict import PolicyVerdict

    chat = window.show_page("chat")
    bar = chat.model_bar
    if page == "chat-paused":
        chat.banner.hide()
        bar.show_verdict(PolicyVerdict(paused=True, recheck_in=128))
        return
    bar.show_verdict(None)
    cut = Path(os.environ["SPECULA_HOME"]).parent / f"cut-short-{served.target.name}"
    if not cut.is_file():
        data = served.target.read_bytes()
        cut.write_bytes(data[: len(data) * 3 // 4])
    failed: list[str] = []
    window.ctx.engine.load_failed.connect(lambda _k, message: failed.append(message))
    bar.choose_target(str(cut))
    wait(lambda: bool(failed) and not window.ctx.engine.is_loading("target"))


if __name__ == "__main__":
    sys.exit(main())
