"""Starts, pauses, resumes and cancels downloads; owns the downloads list and keeps it on disk.

Every page asks this one object (``ctx.downloads``) for a download, so the
Discover page, the drafts panel and the chat's recommendation all show up in
the same list. The core :class:`Download` runs on a small thread pool of its
own (header reads and searches keep the global pool); ``pause()`` and
``cancel()`` only set the core object's flags, which its loop checks on every
chunk. State changes are saved to ``downloads.json`` so the list, and the
paused downloads, survive a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QThreadPool, Signal

from specula.core.gguf.split import part_names
from specula.core.hub.client import HubClient
from specula.core.hub.download import Download, DownloadProgress, DownloadResult, DownloadState
from specula.core.hub.download_records import DownloadRecord, load_records, save_records
from specula.core.hub.partial_files import local_path, part_file, sidecar_file
from specula.gui.downloads.model import DownloadItem, DownloadListModel
from specula.gui.downloads.worker import DownloadRunner, DownloadSignals
from specula.gui.tasks import TaskError

log = logging.getLogger("specula.gui.downloads")

Key = tuple[str, str]


class DownloadManager(QObject):
    download_finished = Signal(str, str, str)
    """A download completed and was verified: repo id, file name, local path of the first part."""
    download_failed = Signal(str, str, str)
    """A download failed: repo id, file name, the reason."""
    active_count_changed = Signal(int)
    """How many downloads are waiting, running or being verified (for the nav badge)."""

    def __init__(self, models_dir: Path, parent: QObject | None = None, *,
                 records_path: Path | None = None, max_parallel: int = 2) -> None:
        super().__init__(parent)
        self.models_dir = models_dir
        self.records_path = records_path
        self.model = DownloadListModel(self)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_parallel)
        self.options: dict[str, object] = {}  # extra Download(...) arguments (tests: chunk size)
        self._running: dict[Key, Download] = {}
        self._signals: dict[Key, DownloadSignals] = {}
        self._active = 0
        for record in load_records(records_path, models_dir):
            self.model.add(DownloadItem(record))

    # -- queries ---------------------------------------------------------------
    def item(self, repo_id: str, filename: str) -> DownloadItem | None:
        row = self.model.find((repo_id, filename))
        return self.model.items[row] if row >= 0 else None

    def is_running(self, repo_id: str, filename: str) -> bool:
        return (repo_id, filename) in self._running

    # -- actions ---------------------------------------------------------------
    def start(self, repo_id: str, filename: str, size: int | None = None) -> DownloadItem:
        """Download ``filename`` (any part of a split model); resumes a paused or failed one."""
        first = part_names(filename)[0]
        key = (repo_id, first)
        row = self.model.find(key)
        if row < 0:
            row = self.model.add(DownloadItem(DownloadRecord(repo_id, first, size)))
        item = self.model.items[row]
        if key in self._running:
            return item
        if size is not None:
            item.record.size = size
        item.record.state = DownloadState.PENDING.value
        item.record.message = ""
        item.speed, item.eta = 0.0, None
        try:
            download = Download(repo_id, first, hub=HubClient(), models_dir=self.models_dir,
                                **self.options)  # type: ignore[arg-type]
        except Exception as exc:  # an unsafe name from the hub: refused before any request
            self._fail(key, TaskError("invalid", str(exc)))
            return item
        signals = DownloadSignals(self)
        signals.progressed.connect(lambda p, k=key: self._on_progress(k, p))
        signals.finished.connect(lambda r, k=key: self._on_finished(k, r))
        signals.failed.connect(lambda e, k=key: self._fail(k, e))
        self._running[key] = download
        self._signals[key] = signals
        self.model.changed(row)
        self._state_changed()
        self.pool.start(DownloadRunner(download, signals))
        return item

    def pause(self, repo_id: str, filename: str) -> None:
        """Stop after the current chunk, keeping the ``.part`` file for a later resume."""
        download = self._running.get((repo_id, filename))
        if download is not None:
            download.pause()

    def resume(self, repo_id: str, filename: str) -> None:
        item = self.item(repo_id, filename)
        if item is not None and not item.active:
            self.start(repo_id, filename, item.record.size)

    def cancel(self, repo_id: str, filename: str) -> None:
        """Stop and delete the incomplete file (a paused one is deleted at once)."""
        key = (repo_id, filename)
        download = self._running.get(key)
        if download is not None:
            download.cancel()
            return
        row = self.model.find(key)
        if row < 0:
            return
        item = self.model.items[row]
        if item.state in (DownloadState.PAUSED, DownloadState.FAILED):
            self._discard_part_files(repo_id, filename)
            item.record.state = DownloadState.CANCELLED.value
            self.model.changed(row)
            self._state_changed()

    def remove(self, repo_id: str, filename: str) -> None:
        """Drop a finished entry from the list (the downloaded file stays)."""
        row = self.model.find((repo_id, filename))
        if row >= 0 and not self.model.items[row].active:
            self.model.remove(row)
            self._save()

    def clear_finished(self) -> None:
        ended = (DownloadState.DONE, DownloadState.CANCELLED, DownloadState.FAILED)
        for row in reversed(range(self.model.rowCount())):
            if self.model.items[row].state in ended:
                self.model.remove(row)
        self._save()

    def shutdown(self, timeout_ms: int = 10000) -> None:
        """Pause every running download (they resume after a restart) and wait for the threads."""
        for download in list(self._running.values()):
            download.pause()
        self.pool.waitForDone(timeout_ms)
        for item in self.model.items:
            if item.active:
                item.record.state = DownloadState.PAUSED.value
        self._save()

    # -- results from the workers (GUI thread) ---------------------------------
    def _on_progress(self, key: Key, progress: DownloadProgress) -> None:
        row = self.model.find(key)
        if row < 0:
            return
        item = self.model.items[row]
        r = item.record
        r.downloaded, r.size = progress.downloaded, progress.total or r.size
        item.speed, item.eta = progress.speed, progress.eta
        item.part, item.parts = progress.part, progress.parts
        if progress.state in (DownloadState.RUNNING, DownloadState.VERIFYING):
            changed = r.state != progress.state.value
            r.state = progress.state.value
            if changed:
                self._save()
        self.model.changed(row)

    def _on_finished(self, key: Key, result: DownloadResult) -> None:
        def record(r: DownloadRecord) -> None:
            if result.state is DownloadState.DONE:
                r.downloaded = r.size or r.downloaded
                r.path = str(result.paths[0]) if result.paths else ""
            elif result.state is DownloadState.CANCELLED:
                r.downloaded = 0

        item = self._end(key, result.state, record)
        if item is not None and result.state is DownloadState.DONE:
            self.download_finished.emit(key[0], key[1], item.record.path)

    def _fail(self, key: Key, error: TaskError) -> None:
        def record(r: DownloadRecord) -> None:
            r.message = error.message

        if self._end(key, DownloadState.FAILED, record) is not None:
            log.warning("download of %s/%s failed: %s", key[0], key[1], error.message)
            self.download_failed.emit(key[0], key[1], error.message)

    def _end(self, key: Key, state: DownloadState,
             record: Callable[[DownloadRecord], None]) -> DownloadItem | None:
        """A download's task ended in ``state``: its row stops moving, ``record`` writes what
        the end leaves on it, and the list is saved (None: the row was removed meanwhile)."""
        self._forget(key)
        row = self.model.find(key)
        if row < 0:
            return None
        item = self.model.items[row]
        item.record.state = state.value
        item.speed, item.eta = 0.0, None
        record(item.record)
        self.model.changed(row)
        self._state_changed()
        return item

    # -- helpers ----------------------------------------------------------------
    def _forget(self, key: Key) -> None:
        self._running.pop(key, None)
        signals = self._signals.pop(key, None)
        if signals is not None:
            signals.deleteLater()

    def _discard_part_files(self, repo_id: str, filename: str) -> None:
        for name in part_names(filename):
            try:
                final = local_path(self.models_dir, repo_id, name)
            except Exception:
                continue
            part_file(final).unlink(missing_ok=True)
            sidecar_file(final).unlink(missing_ok=True)

    def _state_changed(self) -> None:
        self._save()
        active = self.model.active_count()
        if active != self._active:
            self._active = active
            self.active_count_changed.emit(active)

    def _save(self) -> None:
        save_records([i.record for i in self.model.items], self.records_path)
