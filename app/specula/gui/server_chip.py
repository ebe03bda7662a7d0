"""The local server seen from the chat page: a chip that says whether it serves, and its log.

Why on the chat page: the server shares the chat's engine, so its requests queue
with the user's own replies; it used to be visible only on the Settings page.
The chip reads "Server off" or "Serving :1234 · 3 requests"; clicking it opens a
small panel with the URL, Start/Stop and the last requests, every one with its status
(a refusal with its message; a reply with its tokens, speed,
draft acceptance, how each ended). Requests use the chat panel's settings for
the fields they leave out (:meth:`follow`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QListWidget,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.engine.config import SpecConfig
from specula.core.engine.sampling.rules import SamplingParams
from specula.gui.server_host import ServerSwitch
from specula.server.app import Answered

LOG_SHOWN = 8


def log_line(a: Answered) -> str:
    """'12:03:14 · POST /v1/chat/completions · 200 · 128 tokens · 41.2 tok/s · 80% of 96
    drafted · stop'; a refusal: '12:03:15 · POST /v1/chat/completions · 404 · The model …'."""
    when = time.strftime("%H:%M:%S", time.localtime(a.at))
    parts = [f"{a.method} {a.path}", str(a.status)]
    f = a.finished
    if a.status >= 400 or f is None:
        if a.message:
            parts.append(a.message)
        return f"{when} · " + " · ".join(parts)
    parts.append(f"{f.tokens} tokens")
    if f.tokens_per_s:
        parts.append(f"{f.tokens_per_s:.1f} tok/s")
    if f.drafted:
        parts.append(f"{f.accepted / f.drafted:.0%} of {f.drafted} drafted")
    parts.append(f.stop_reason.value if f.stop_reason is not None else "failed")
    return f"{when} · " + " · ".join(parts)


class ServerLog(QFrame):
    """The chip's panel: state, Start/Stop, the last requests."""

    def __init__(self, server: ServerSwitch, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("ServerLog")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.server = server
        lay = QVBoxLayout(self)
        self.state = QLabel("", self)
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.state)
        self.toggle = QPushButton("", self)
        self.toggle.clicked.connect(self._toggle)
        lay.addWidget(self.toggle)
        self.requests = QListWidget(self)
        self.requests.setWordWrap(True)
        self.requests.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFixedWidth(400)
        self.requests.setFixedHeight(110)
        lay.addWidget(self.requests)
        note = QLabel("Requests use this chat's settings for what they leave out.", self)
        note.setObjectName("Muted")
        note.setWordWrap(True)
        lay.addWidget(note)
        self.refresh()

    def refresh(self) -> None:
        s = self.server
        self.state.setText(s.message)
        self.toggle.setText("Stop the server" if s.running else "Start the server")
        self.requests.clear()
        shown = list(s.log)[-LOG_SHOWN:]
        for f in reversed(shown):
            self.requests.addItem(log_line(f))
        if not shown:
            self.requests.addItem("No requests yet.")

    def _toggle(self) -> None:
        port = self.server.settings.server_port if self.server.settings else None
        if self.server.running:
            self.server.stop()
        elif port:
            self.server.start(port)
        else:
            self.server.start()


class ServerChip(QToolButton):
    def __init__(self, server: ServerSwitch, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ServerChip")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.server = server
        self.panel = ServerLog(server, self)
        self.clicked.connect(self.show_log)
        server.state_changed.connect(self._update)
        server.request_answered.connect(self._update)
        self._update()

    def follow(self, settings: Callable[[], tuple[SamplingParams, SpecConfig]],
               changed: list[object]) -> None:
        """Serve with ``settings()`` (the chat panel's), again whenever a signal in ``changed``
        fires."""
        def push(*_args: object) -> None:
            self.server.set_defaults(*settings())

        for signal in changed:
            signal.connect(push)  # type: ignore[attr-defined]
        push()

    def _update(self, *_args: object) -> None:
        s = self.server
        n = len(s.log)
        if s.running and s.server is not None:
            count = f" · {n} request" + ("s" if n != 1 else "") if n else ""
            self.setText(f"Serving :{s.server.port}{count}")
            self.setProperty("on", True)
        else:
            self.setText("Server off")
            self.setProperty("on", False)
        self.setToolTip(f"{s.message}\nClick for its requests and Start/Stop.")
        self.style().unpolish(self)
        self.style().polish(self)
        if self.panel.isVisible():
            self.panel.refresh()

    def show_log(self) -> ServerLog:
        self.panel.refresh()
        self.panel.adjustSize()
        below = self.mapToGlobal(QPoint(self.width() - self.panel.width(), self.height()))
        self.panel.move(below)
        self.panel.show()
        return self.panel
