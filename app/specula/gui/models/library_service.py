"""The local library for every page: one scan result, rescanned in the background.

Pages read ``ctx.library.models`` and listen to :attr:`LibraryService.scanned`.
Scans (which read the headers of new files) and removals run off the GUI
thread; a newer scan cancels the older one's result.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from specula.core.library.configured import configured_library
from specula.core.library.scan import Library, LocalModel, ScanResult, resolve_models_dir
from specula.core.settings import Settings
from specula.gui.tasks import Task, TaskContext, TaskError, start_task


class LibraryService(QObject):
    scanned = Signal(object)
    """A scan finished: the list of LocalModel, sorted by repository and name."""
    scan_failed = Signal(str)
    """A scan could not run (a folder unreadable...): one sentence."""
    removed = Signal(str)
    """A model was deleted from the models folder: its path."""
    remove_failed = Signal(str)
    """A removal was refused or failed: one sentence."""

    def __init__(self, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.models: list[LocalModel] = []
        self.scanning = False
        self._task: Task | None = None

    @property
    def models_dir(self) -> Path:
        return resolve_models_dir(self.settings.models_dir or None)

    def library(self) -> Library:
        return configured_library(self.settings)  # the same folders as `specula models list`

    def rescan(self) -> None:
        """Scan every folder again (cheap for unchanged files: the index answers)."""
        if self._task is not None:
            self._task.cancel()
        library = self.library()
        self.scanning = True

        def work(ctx: TaskContext) -> ScanResult:
            return library.scan()

        self._task = start_task(self, work, on_done=self._on_scanned, on_failed=self._on_failed)

    def _on_scanned(self, result: ScanResult) -> None:
        self.scanning = False
        self.models = result.models
        self.scanned.emit(self.models)

    def _on_failed(self, error: TaskError) -> None:
        self.scanning = False
        self.scan_failed.emit(error.message)

    def find(self, path: str) -> LocalModel | None:
        for m in self.models:
            if str(m.path) == path or any(str(p) == path for p in m.parts):
                return m
        return None

    def remove(self, model: LocalModel) -> None:
        """Delete a downloaded model (all parts); refused for folders Specula only indexes."""
        library = self.library()
        path = str(model.path)

        def work(ctx: TaskContext) -> str:
            library.remove(path)
            return path

        def done(p: str) -> None:
            self.removed.emit(p)
            self.rescan()

        start_task(self, work, on_done=done,
                   on_failed=lambda e: self.remove_failed.emit(e.message))
