"""`specula chat`: a terminal chat that streams replies and prints the stats line.

Accepted draft tokens are shown in colour when the output is a terminal.
Commands: /draft on|off, /mode NAME, /reset, /stats, /quit.
"""

from __future__ import annotations

import argparse
import io
import secrets
import sys
import threading
from dataclasses import replace

from specula.commands._common import fail, say, terminal_text
from specula.commands._engine_args import (
    add_model_args,
    add_sampling_args,
    add_spec_args,
    load_engine,
    sampling_params,
    spec_config,
    target_name,
)
from specula.commands._load_defaults import apply_load_defaults, defer_defaults
from specula.core.chat.overflow import (
    DEFAULT_POLICY,
    ContextFull,
    fit,
    left_out_text,
    prompt_budget,
)
from specula.core.chat.template import TemplateError
from specula.core.engine.config import Mode, SpecConfig, mtp_refusal
from specula.core.engine.engine import Engine, LoadError
from specula.core.engine.events import Done, StopReason, TokenEvent, TokenOrigin
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.safe_text import display_text

GREEN, CYAN, RESET, DIM = "\x1b[32m", "\x1b[36m", "\x1b[0m", "\x1b[2m"
# Drafted tokens are green, but those copied from text (no model drafted them) cyan.
COPIED = frozenset({TokenOrigin.LOOKUP, TokenOrigin.NGRAM_CACHE})
HELP = "commands: /draft on|off, /mode plain|chain|adaptive|tree|lookup|mtp, /reset, /stats, /quit"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    add_sampling_args(p)
    add_spec_args(p)
    defer_defaults(p)  # a model's own load defaults fill what is not given
    p.add_argument("--system", default="", help="system prompt")
    p.add_argument("--no-color", action="store_true", help="do not colour accepted draft tokens")


def _load(a: argparse.Namespace) -> Engine | int:
    try:
        return load_engine(a)
    except LoadError as exc:
        return fail(str(exc))


def _handle_command(line: str, state: dict[str, object], engine: Engine) -> bool:
    """Apply a /command; returns False to quit."""
    parts = line.split()
    cmd = parts[0]
    spec = state["spec"]
    assert isinstance(spec, SpecConfig)
    if cmd in ("/quit", "/exit"):
        return False
    if cmd == "/draft" and len(parts) == 2 and parts[1] in ("on", "off"):
        state["draft_on"] = parts[1] == "on"
        if state["draft_on"] and not engine.has_draft:
            print("no draft model loaded (start with --draft)", file=sys.stderr)
        say(f"draft {parts[1]}", file=sys.stderr)
    elif cmd == "/mode" and len(parts) == 2 and parts[1] == Mode.MTP.value and not engine.mtp_layers:
        # refused as `--mode mtp` is: without MTP layers it would run plain unsaid
        say(f"specula: error: {mtp_refusal(target_name(engine))}", file=sys.stderr)
    elif cmd == "/mode" and len(parts) == 2 and parts[1] in {m.value for m in Mode}:
        state["spec"] = replace(spec, mode=Mode(parts[1]))
        say(f"mode {parts[1]}", file=sys.stderr)
    elif cmd == "/reset":
        state["messages"] = state["messages"][:1] if state["system"] else []  # type: ignore[index]
        state["left_out"] = 0
        print("conversation cleared", file=sys.stderr)
    elif cmd == "/stats":
        last = state.get("last")
        print(last.summary_line() if last else "no reply yet", file=sys.stderr)  # type: ignore[attr-defined]
    else:
        print(HELP, file=sys.stderr)
    return True


def _tolerant_streams() -> None:
    """Bytes that are not UTF-8 on stdin, and text the terminal's encoding cannot show,
    become U+FFFD / '?' instead of ending the session with a Unicode error."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")


def clean_line(line: str) -> str:
    """``line`` without lone surrogates (what ``surrogateescape`` makes of invalid UTF-8)."""
    try:
        raw = line.encode("utf-8", "surrogateescape")  # the bytes that came in
    except UnicodeEncodeError:  # a surrogate that no decoder made: replace it
        raw = line.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def _brief(text: str, width: int = 48) -> str:
    one_line = display_text(" ".join(text.split()))
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def left_out_list(messages: list[dict[str, str]], start: int, n: int, already: int = 0,
                  most: int = 6) -> str:
    """Which messages an overflow left out, one brief line each (numbered as in the
    conversation), so the user sees what the model no longer reads: those beyond the
    ``already`` left out before (they stay out), all of them after a change of course;
    past ``most``, the first and last ones and how many between."""
    if not n:
        return ""
    skip = already if 0 < already < n else 0
    gone = list(enumerate(messages[start + skip:start + n], start + skip + 1))
    hidden = len(gone) - most
    if hidden > 0:
        gone = [*gone[: most // 2], (0, {}), *gone[-(most - most // 2):]]
    lines = [f"\n  ... {hidden} more" if not i else
             f"\n  #{i} {m.get('role', '?')}: {_brief(str(m.get('content', '')))}" for i, m in gone]
    return ("; now also:" if skip else ":") + "".join(lines)


def reply_params(params: SamplingParams) -> SamplingParams:
    """``--seed -1``: a fresh seed for each reply, drawn here so that it can be shown."""
    if params.seed is not None and params.seed < 0:
        return replace(params, seed=secrets.randbelow(2**31))
    return params


def run(a: argparse.Namespace) -> int:
    apply_load_defaults(a)
    _tolerant_streams()
    loaded = _load(a)
    if isinstance(loaded, int):
        return loaded
    engine = loaded
    color = sys.stdout.isatty() and not a.no_color
    params = sampling_params(a)
    messages: list[dict[str, str]] = [{"role": "system", "content": a.system}] if a.system else []
    state: dict[str, object] = {
        "spec": spec_config(a, engine.has_draft), "draft_on": True, "messages": messages,
        "system": a.system, "last": None, "left_out": 0,
    }
    print(f"{engine.backend}, {engine.n_threads} threads. {HELP}", file=sys.stderr)
    while True:
        try:
            line = input("> ")
        except EOFError:
            break
        line = clean_line(line)
        if not line.strip():
            continue
        if line.startswith("/"):
            if not _handle_command(line.strip(), state, engine):
                break
            continue
        msgs = state["messages"]
        assert isinstance(msgs, list)
        msgs.append({"role": "user", "content": line})
        spec = state["spec"]
        assert isinstance(spec, SpecConfig)
        if not state["draft_on"]:
            spec = replace(spec, mode=Mode.PLAIN)
        cancel = threading.Event()
        done: Done | None = None
        reply = reply_params(params)
        try:
            before = int(state["left_out"])  # type: ignore[call-overload,unused-ignore]
            fitted = fit(msgs, DEFAULT_POLICY, prompt_budget(engine.n_ctx, reply.max_tokens),
                         lambda m: len(engine.tokenize_chat(m)), keep_out=before)
            if fitted.left_out != before:
                say(f"[{left_out_text(fitted.left_out)}"
                    f"{left_out_list(msgs, fitted.start, fitted.left_out, before)}]", file=sys.stderr)
            state["left_out"] = fitted.left_out
            for ev in engine.chat(fitted.messages, reply, spec, cancel):
                if isinstance(ev, TokenEvent):
                    shown = terminal_text(ev.text)  # a model's ESC sequences are shown, not run
                    if color and ev.source.drafted:
                        sys.stdout.write((CYAN if ev.source in COPIED else GREEN) + shown + RESET)
                    else:
                        sys.stdout.write(shown)
                    sys.stdout.flush()
                elif isinstance(ev, Done):
                    done = ev
        except KeyboardInterrupt:
            cancel.set()
            print("\n[stopped]", file=sys.stderr)
        except (TemplateError, LoadError, ValueError, ContextFull) as exc:
            # The template refused this conversation (or a limit hit): say so, drop the
            # message that caused it and keep the session.
            msgs.pop()
            fail(str(exc))
            continue
        sys.stdout.write("\n")
        if done is not None:
            msgs.append({"role": "assistant", "content": done.text})
            state["last"] = done.stats
            note = "" if done.stop_reason in (StopReason.EOS, StopReason.STOP_STRING) else f", stopped: {done.stop_reason.value}"
            if done.message:
                note += f" ({terminal_text(done.message)})"
            if reply.seed is not None and reply.seed != params.seed:
                note += f", seed {reply.seed}"
            print(f"{DIM if color else ''}[{done.stats.summary_line()}{note}]{RESET if color else ''}", file=sys.stderr)
    engine.close()
    return 0
