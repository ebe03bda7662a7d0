"""The model bar's two pickers: the target's (list, Open…, load options, Eject) and the draft's.

They paint what :mod:`specula.gui.chat.draft_list` works out and say what the
user picked (:attr:`TargetPicker.chosen`, :attr:`DraftPicker.chosen`); loading,
remembering and the session live in :class:`specula.gui.chat.model_bar.ModelBar`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QWidget

from specula.core.library.labels import ModelLabel
from specula.gui.chat.draft_list import DraftRow
from specula.gui.chat.load_gear import LoadGear
from specula.gui.context import AppContext
from specula.gui.elided import DETAIL_ROLE, ElidingCombo

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
USABLE_ROLE = Qt.ItemDataRole.UserRole + 2
GGUF_FILTER = "GGUF models (*.gguf);;All files (*)"


def dialog_folder(models_dir: Path) -> str:
    """Where the file picker opens: the models folder (created if missing), else home."""
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        return str(Path.home())
    return str(models_dir)


def _row(parent: QWidget, caption: str) -> QHBoxLayout:
    row = QHBoxLayout(parent)
    row.setContentsMargins(0, 0, 0, 0)
    label = QLabel(caption, parent)
    label.setObjectName("PanelTitle")
    row.addWidget(label)
    return row


# The least: a name's start and its size ("Qwen2.5…  1.5B"); the header must still fit a
# 1024 px window, so wider only when the window is.
PICKER_MIN_WIDTH = 125


def _combo(parent: QWidget) -> ElidingCombo:
    combo = ElidingCombo(parent)
    combo.setMinimumWidth(PICKER_MIN_WIDTH)
    return combo


class _Picker(QWidget):
    chosen = Signal(str)
    """The user picked a model: its path (from the list or the file dialog)."""

    def __init__(self, caption: str, what: str, folder: Callable[[], str],
                 parent: QWidget | None) -> None:
        super().__init__(parent)
        self._what, self._folder = what, folder
        self.row = _row(self, caption)
        self.combo = _combo(self)
        self.combo.activated.connect(self._on_activated)
        self.row.addWidget(self.combo, 1)
        self.open_button = QPushButton("Open…", self)
        self.open_button.setToolTip(f"Load a {what} model from a GGUF file")
        self.open_button.clicked.connect(self.open_dialog)
        self.row.addWidget(self.open_button)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Open a {self._what} model", self._folder(),
                                              GGUF_FILTER)
        if path:
            self.chosen.emit(path)

    def _on_activated(self, index: int) -> None:
        path = self.combo.itemData(index, PATH_ROLE)
        self._picked(str(path) if path else "")

    def _picked(self, path: str) -> None:
        if path:
            self.chosen.emit(path)


class TargetPicker(_Picker):
    eject_requested = Signal()
    """Eject: unload the target and the draft."""

    def __init__(self, ctx: AppContext, reload: Callable[[], None], folder: Callable[[], str],
                 parent: QWidget | None = None) -> None:
        super().__init__("Target", "target", folder, parent)
        self.combo.setPlaceholderText("Choose a model…")
        self.load_gear = LoadGear(ctx, reload, self)
        self.row.addWidget(self.load_gear)
        self.eject = QPushButton("Eject", self)
        self.eject.setToolTip("Unload the target and the draft (frees their memory)")
        self.eject.clicked.connect(self.eject_requested)
        self.eject.setEnabled(False)
        self.row.addWidget(self.eject)

    def fill(self, items: list[tuple[str, ModelLabel]], current: str) -> None:
        """List ``items`` (path, label) and show ``current`` (none when it is not listed)."""
        combo = self.combo
        combo.clear()
        for path, label in items:
            combo.addItem(label.text)
            i = combo.count() - 1
            combo.setItemData(i, path, PATH_ROLE)
            combo.setItemData(i, label.detail, DETAIL_ROLE)
            combo.setItemData(i, path, Qt.ItemDataRole.ToolTipRole)
        paths = [p for p, _ in items]
        combo.setCurrentIndex(paths.index(current) if current in paths else -1)


class DraftPicker(_Picker):
    """The draft list; unlike the target's, it also says when "No draft" or the built-in
    head is picked (:attr:`chosen` with ``""`` or ``BUILTIN_MTP``)."""

    def __init__(self, folder: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__("Draft", "draft", folder, parent)
        self.model = QStandardItemModel(self)
        self.combo.setModel(self.model)

    def _picked(self, path: str) -> None:
        self.chosen.emit(path)

    def fill(self, rows: list[DraftRow], select: int) -> None:
        m = self.model
        m.clear()
        for r in rows:
            item = QStandardItem(r.text)
            item.setData(r.path, PATH_ROLE)
            if r.usable is not None:
                item.setData(r.usable, USABLE_ROLE)
            if r.detail:
                item.setData(r.detail, DETAIL_ROLE)
            if r.tooltip:
                item.setToolTip(r.tooltip)
            item.setEnabled(r.usable is not False)
            m.appendRow(item)
        self.combo.setCurrentIndex(select)

    def entry(self, path: str) -> QStandardItem | None:
        """The row for ``path``, if listed."""
        for row in range(self.model.rowCount()):
            item = self.model.item(row)
            if item.data(PATH_ROLE) == str(path):
                return item
        return None
