"""The first-run path to models already on disk: one button per folder found, and Add folder….

Shown on the welcome screen and in the empty My Models. The folders come from
:func:`specula.core.library.found_folders.found_model_folders` (LM Studio's
models folder, the Hugging Face cache), searched in the background; a click
adds the folder to the library's extra folders (indexed in place, never
copied), as Settings -> Model folders does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from specula.core.library.found_folders import FoundFolder, found_model_folders
from specula.gui.context import AppContext
from specula.gui.models.widgets import muted
from specula.gui.settings.model_folders import choose_folder
from specula.gui.tasks import Task, start_task


class FolderOffers(QWidget):
    offers_shown = Signal()
    """The search for folders finished and the buttons show what it found."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.pick_folder: Callable[[QWidget, str], str] = (  # tests replace it
            lambda w, title: choose_folder(w, title, str(Path.home())))
        self.found: list[FoundFolder] = []
        self.buttons: list[QPushButton] = []
        self._task: Task | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        lay.addSpacing(10)  # apart from the buttons above it
        self.note = muted("", self)
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(self.note)
        self._rows = QVBoxLayout()
        lay.addLayout(self._rows)
        self.add_folder = QPushButton("Add folder…", self)
        self.add_folder.setToolTip("Index the GGUF files of a folder where they are "
                                   "(nothing is copied); also under Settings -> Model folders")
        self.add_folder.clicked.connect(self._add_dialog)
        lay.addWidget(self.add_folder, 0, Qt.AlignmentFlag.AlignHCenter)
        ctx.library_folders_changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Look for the folders again (in the background), leaving out those already added."""
        if self._task is not None:
            self._task.cancel()
        known = [str(self.ctx.library.models_dir), *self.ctx.settings.extra_model_dirs]
        self._task = start_task(self, lambda _t: found_model_folders(known), on_done=self._show)

    def _show(self, found: list[FoundFolder]) -> None:
        self.found = found
        for b in self.buttons:
            self._rows.removeWidget(b)
            b.deleteLater()
        self.buttons = []
        for f in found:
            b = QPushButton(f"Add {f.source} models ({f.count_text})", self)
            b.setObjectName("Primary" if not self.buttons else "")
            b.setToolTip(f"Index {f.path} where it is: nothing is copied, nothing deleted")
            b.clicked.connect(lambda _=False, p=str(f.path): self.add(p))
            self._rows.addWidget(b, 0, Qt.AlignmentFlag.AlignHCenter)
            self.buttons.append(b)
        self.note.setText(
            "Models already on this computer:" if found else
            "Have GGUF files already? Add their folder: they are used where they are.")
        self.offers_shown.emit()

    def add(self, folder: str) -> None:
        """Index ``folder`` too (saved in the settings; the library is rescanned)."""
        if self.ctx.settings.add_extra_dir(folder):
            self.ctx.save_settings()
            self.ctx.library_folders_changed.emit()

    def _add_dialog(self) -> None:
        folder = self.pick_folder(self, "Index the GGUF files in this folder")
        if folder:
            self.add(folder)
