"""Waiting on a running Qt app from a script (the screenshot tools).

A screenshot script drives the real app: it waits until a condition holds (a
model loaded, a reply finished) and lets pending paints and layouts settle
before grabbing a window, running the Qt event loop all the while.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Waits:
    """``wait(cond)`` and ``settle()`` over ``app``'s event loop, with the script's defaults."""

    def __init__(self, app: Any, timeout: float, settle_s: float) -> None:
        self.app, self.timeout, self.settle_s = app, timeout, settle_s

    def wait(self, cond: Callable[[], bool], timeout: float | None = None) -> None:
        """Run the event loop until ``cond()`` holds; TimeoutError after ``timeout`` seconds."""
        from PySide6.QtCore import QEventLoop

        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError("the app did not get there in time")
            self.app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)

    def settle(self, seconds: float | None = None) -> None:
        """Run the event loop for ``seconds`` (pending paints, layouts and timers)."""
        end = time.monotonic() + (self.settle_s if seconds is None else seconds)
        while time.monotonic() < end:
            self.app.processEvents()


def grab(window: Any, path: Path) -> Path:
    """Save ``window`` with its frame, as the screen shows it, to ``path`` (a PNG)."""
    from PySide6.QtGui import QGuiApplication

    g = window.frameGeometry()
    QGuiApplication.primaryScreen().grabWindow(0, g.x(), g.y(), g.width(), g.height()).save(str(path))
    return path
