"""Settings: where models are downloaded, and extra folders indexed in place (never copied).

LM Studio's models folder and the Hugging Face cache are offered when they
exist on this machine. Every change is saved and the library rescanned.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.library.scan import suggested_extra_dirs
from specula.gui.context import AppContext


def choose_folder(parent: QWidget, title: str, start: str = "") -> str:
    """A folder picker that opens in ``start`` (the models folder), not the working directory."""
    return QFileDialog.getExistingDirectory(parent, title, start)


class ModelFolders(QGroupBox):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__("Model folders", parent)
        self.ctx = ctx
        self.pick_folder: Callable[[QWidget, str], str] = (  # tests replace it
            lambda w, title: choose_folder(w, title, str(ctx.library.models_dir)))
        lay = QVBoxLayout(self)
        self.models_dir = QLabel("", self)
        self.models_dir.setWordWrap(True)
        lay.addWidget(self.models_dir)
        row = QHBoxLayout()
        self.change_dir = QPushButton("Change download folder…", self)
        self.change_dir.clicked.connect(self._change_models_dir)
        row.addWidget(self.change_dir)
        row.addStretch(1)
        lay.addLayout(row)
        hint = QLabel("Extra folders are indexed where they are (nothing is copied, and Specula "
                      "never deletes from them):", self)
        hint.setObjectName("Muted")
        hint.setWordWrap(True)
        lay.addWidget(hint)
        self.extra = QListWidget(self)
        self.extra.setObjectName("ExtraFolders")
        self.extra.setMaximumHeight(110)
        lay.addWidget(self.extra)
        row = QHBoxLayout()
        self.add_button = QPushButton("Add folder…", self)
        self.add_button.clicked.connect(self._add_dialog)
        row.addWidget(self.add_button)
        self.remove_button = QPushButton("Remove", self)
        self.remove_button.clicked.connect(self.remove_selected)
        row.addWidget(self.remove_button)
        self.suggested: list[QPushButton] = []
        for folder in suggested_extra_dirs():
            b = QPushButton(f"Add {folder}", self)
            b.setToolTip("Found on this machine (LM Studio or the Hugging Face cache)")
            b.clicked.connect(lambda _=False, f=str(folder): self.add(f))
            row.addWidget(b)
            self.suggested.append(b)
        row.addStretch(1)
        lay.addLayout(row)
        self.setMaximumWidth(760)
        self._refresh()

    def _refresh(self) -> None:
        s = self.ctx.settings
        self.models_dir.setText(f"Downloads go to: {self.ctx.library.models_dir}")
        self.extra.clear()
        self.extra.addItems(s.extra_model_dirs)
        for b in self.suggested:
            b.setEnabled(b.text().removeprefix("Add ") not in s.extra_model_dirs)

    def add(self, folder: str) -> None:
        if self.ctx.settings.add_extra_dir(folder):
            self._changed()

    def remove_selected(self) -> None:
        item = self.extra.currentItem()
        if item is not None and item.text() in self.ctx.settings.extra_model_dirs:
            self.ctx.settings.extra_model_dirs.remove(item.text())
            self._changed()

    def _add_dialog(self) -> None:
        folder = self.pick_folder(self, "Index GGUF files in this folder")
        if folder:
            self.add(folder)

    def _change_models_dir(self) -> None:
        folder = self.pick_folder(self, "Download models into this folder")
        if folder and Path(folder).is_dir():
            self.ctx.settings.models_dir = folder
            self.ctx.downloads.models_dir = self.ctx.library.models_dir
            self._changed()

    def _changed(self) -> None:
        self.ctx.save_settings()
        self.ctx.library_folders_changed.emit()
        self._refresh()
