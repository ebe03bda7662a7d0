"""Screenshots of every page: ``python -m specula.tools.screenshots OUTDIR``.

With no options it uses the tiny test models; ``--target T --draft D
[--incompatible G] [--prefix real-] [--prompt TEXT]`` takes real GGUF files
instead (the README's real-pair screenshots).

Runs offscreen unless a display is set (``QWidget.grab()`` works either
way), in a throw-away SPECULA_HOME, with the real engine: it loads the tiny
target and draft, sends a message, runs a comparison and writes PNGs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROMPT = "hello world, write the draft model code"
SIZE = (1440, 900)


def _wait(app: object, cond: Callable[[], bool], timeout: float = 900.0) -> None:
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    assert isinstance(app, QApplication)
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("the app did not get there in time")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m specula.tools.screenshots")
    p.add_argument("out", nargs="?", default="docs/screenshots")
    p.add_argument("--target", help="target GGUF (default: the tiny test target)")
    p.add_argument("--draft", help="draft GGUF (default: the tiny test draft)")
    p.add_argument("--incompatible", help="a GGUF listed as a draft, to show it disabled")
    p.add_argument("--prefix", default="", help="prefix of the PNG names")
    p.add_argument("--prompt", default=PROMPT)
    p.add_argument("--max-tokens", type=int, default=160)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = Path(tempfile.mkdtemp(prefix="specula-shots-"))
    os.environ["SPECULA_HOME"] = str(work / "home")

    if args.target and args.draft:
        target, draft, other = args.target, args.draft, args.incompatible
    else:
        from specula.tools.tiny_models import build_family

        tiny = build_family(work / "models")
        target, draft, other = str(tiny["target"]), str(tiny["draft"]), str(tiny["other"])
    from specula.core.settings import Settings

    settings = Settings()
    settings.generation.max_tokens = args.max_tokens
    if other:
        settings.recent_drafts = [other]  # shows up disabled, with its reason
    settings.save()

    from specula.gui.app import create_window, ensure_qapp

    app = ensure_qapp()
    window = create_window(target, draft)
    window.resize(*SIZE)
    window.show()
    engine, chat = window.ctx.engine, window.chat
    _wait(app, lambda: engine.has_draft)
    chat.splitter.setSizes([230, 800, 380])

    def shot(name: str) -> None:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            app.processEvents()
        path = out / f"{args.prefix}{name}.png"
        window.grab().save(str(path))
        print(path)

    done: list[object] = []
    chat.reply_finished.connect(done.append)
    chat.send(args.prompt)
    _wait(app, lambda: len(done) == 1)
    chat.colours.set_mode("source")
    shot("chat-token-colours")
    chat.colours.set_mode("heat")
    shot("chat-heat")
    chat.colours.set_mode("off")
    shot("chat-markdown")

    from specula.gui import theme

    theme.apply("light")
    chat.colours.set_mode("source")
    shot("chat-light")
    theme.apply("dark")

    compare = window.show_page("compare")
    compare.prompt.setPlainText(args.prompt)
    compared: list[str] = []
    compare.compared.connect(compared.append)
    compare.run()
    _wait(app, lambda: bool(compared))
    shot("compare")
    window.show_page("settings")
    shot("settings")
    window.ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
