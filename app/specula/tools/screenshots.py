"""Screenshots of every page with the tiny models: ``python -m specula.tools.screenshots OUTDIR``.

Runs offscreen unless a display is set (``QWidget.grab()`` works either
way), in a throw-away SPECULA_HOME, with the real engine: it loads the tiny
target and draft, sends a message, runs a comparison and writes PNGs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROMPT = "hello world, write the draft model code"
SIZE = (1440, 900)


def _wait(app: object, cond: Callable[[], bool], timeout: float = 120.0) -> None:
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    assert isinstance(app, QApplication)
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("the app did not get there in time")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "docs/screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = Path(tempfile.mkdtemp(prefix="specula-shots-"))
    os.environ["SPECULA_HOME"] = str(work / "home")

    from specula.tools.tiny_models import build_family

    tiny = build_family(work / "models")
    from specula.core.settings import Settings

    settings = Settings()
    settings.generation.max_tokens = 160
    settings.recent_drafts = [str(tiny["other"])]  # shows up disabled, with its reason
    settings.save()

    from specula.gui.app import create_window, ensure_qapp

    app = ensure_qapp()
    window = create_window(str(tiny["target"]), str(tiny["draft"]))
    window.resize(*SIZE)
    window.show()
    engine, chat = window.ctx.engine, window.chat
    _wait(app, lambda: engine.has_draft)
    chat.splitter.setSizes([230, 800, 380])

    def shot(name: str) -> None:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            app.processEvents()
        path = out / f"{name}.png"
        window.grab().save(str(path))
        print(path)

    done: list[object] = []
    chat.reply_finished.connect(done.append)
    chat.send(PROMPT)
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
    compare.prompt.setPlainText(PROMPT)
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
