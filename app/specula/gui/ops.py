"""Run a short blocking function off the GUI thread, with success/failure callbacks.

Anki's ``QueryOp`` in miniature: header reads, compatibility checks and file
scans go through :func:`run_in_background`; the callbacks run on the GUI
thread, and only while ``owner`` still exists.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger("specula.gui.ops")


class _Relay(QObject):
    """Carries a background result back to the GUI thread."""

    succeeded = Signal(object)
    """The function returned this value."""
    failed = Signal(str)
    """The function raised; the argument is a one-line message."""


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any], relay: _Relay) -> None:
        super().__init__()
        self._fn = fn
        self._relay = relay

    def run(self) -> None:
        try:
            result = self._fn()
        except Exception as exc:  # reported to the caller, not raised into Qt
            log.debug("background job failed\n%s", traceback.format_exc())
            self._relay.failed.emit(f"{exc}" or type(exc).__name__)
        else:
            self._relay.succeeded.emit(result)


_live: set[_Relay] = set()


def run_in_background(
    owner: QObject,
    fn: Callable[[], Any],
    on_done: Callable[[Any], None],
    on_failed: Callable[[str], None] | None = None,
) -> None:
    """Call ``fn()`` on the thread pool; then ``on_done(result)`` or ``on_failed(msg)``."""
    relay = _Relay()
    _live.add(relay)
    alive = [True]

    def _owner_gone() -> None:
        alive[0] = False

    owner.destroyed.connect(_owner_gone)

    def _finish() -> None:
        _live.discard(relay)
        relay.deleteLater()
        try:
            owner.destroyed.disconnect(_owner_gone)
        except (RuntimeError, TypeError):
            pass

    def _ok(value: object) -> None:
        _finish()
        if alive[0]:
            on_done(value)

    def _bad(message: str) -> None:
        _finish()
        if alive[0] and on_failed is not None:
            on_failed(message)

    relay.succeeded.connect(_ok)
    relay.failed.connect(_bad)
    QThreadPool.globalInstance().start(_Job(fn, relay))
