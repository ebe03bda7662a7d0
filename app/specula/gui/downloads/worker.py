"""One download on a worker thread: the core :class:`Download` with its progress relayed.

The core object does the work and checks its pause/cancel flags on every
chunk; this runnable only carries its progress snapshots (already throttled
to a few per second by the core) and its end to the GUI thread through
queued signals. Hashing happens inside ``Download.run``, so off the GUI thread.
"""

from __future__ import annotations

import logging
import traceback

from PySide6.QtCore import QObject, QRunnable, Signal

from specula.core.hub.download import Download, DownloadProgress, DownloadResult
from specula.gui.tasks import TaskError, describe_error

log = logging.getLogger("specula.gui.downloads")


class DownloadSignals(QObject):
    """Lives on the GUI thread; the worker thread emits, so every slot runs queued."""

    progressed = Signal(object)
    """A DownloadProgress snapshot (bytes, speed, ETA, state: running or verifying)."""
    finished = Signal(object)
    """The run ended without an error: a DownloadResult (done, paused or cancelled)."""
    failed = Signal(object)
    """The run failed: a TaskError with the hub error's kind and message."""


class DownloadRunner(QRunnable):
    def __init__(self, download: Download, signals: DownloadSignals) -> None:
        super().__init__()
        self.download = download
        self.signals = signals
        download.on_progress = self._progress

    def _progress(self, progress: DownloadProgress) -> None:
        self.signals.progressed.emit(progress)

    def run(self) -> None:
        try:
            result: DownloadResult = self.download.run()
        except Exception as exc:
            if not isinstance(exc, OSError):
                log.debug("download failed\n%s", traceback.format_exc())
            error: TaskError = describe_error(exc)
            self.signals.failed.emit(error)
        else:
            self.signals.finished.emit(result)
