"""The library as a table: one row per model, sortable and filterable through a proxy."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import (
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor

from specula.core.gguf.model_info import ModelInfo
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import human_params, human_size
from specula.gui import theme
from specula.gui.models.row_table import ROW_ROLE, RowTableModel

MODEL_ROLE = ROW_ROLE
SORT_ROLE = Qt.ItemDataRole.UserRole + 2

COLUMNS = ("Name", "Arch", "Params", "Quant", "Size", "Context", "Tokenizer", "Location")
HEADER_TIPS = ("File name (with its folder when the same file is in more than one)",
               "Architecture", "Parameters", "Quantization", "On disk (all parts)",
               "Context length the model was trained for",
               "Tokenizer type and vocabulary size (models that can pair share both)",
               "Repository or folder")


def _location(model: LocalModel) -> str:
    if model.managed:
        return model.repo_id or str(model.path.parent)
    return str(model.path.parent)  # an extra folder: where the file really is


class LibraryTableModel(RowTableModel):
    columns = COLUMNS
    header_tips = HEADER_TIPS

    @property
    def models(self) -> list[LocalModel]:
        return self.rows  # type: ignore[return-value]

    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)
        self._twins: set[str] = set()  # file names found in more than one folder

    def set_models(self, models: list[LocalModel]) -> None:
        names = [m.name for m in models]
        self._twins = {n for n in names if names.count(n) > 1}
        self.set_rows(models)

    def name_text(self, m: LocalModel) -> str:
        """The file name; a file found in two folders also names its folder, to tell them apart."""
        text = self._text(m, 0)
        return f"{text}  — {model_folder(m).name}/" if m.name in self._twins else text

    def cell(self, m: LocalModel, col: int, role: int) -> object:  # type: ignore[override]
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(m.path) if m.error is None else f"{m.path}\n{m.error}"
        if role == Qt.ItemDataRole.DisplayRole:
            return self.name_text(m) if col == 0 else self._text(m, col)
        if role == Qt.ItemDataRole.ForegroundRole and m.info is None:
            return QColor(theme.palette().muted)  # listed, greyed: it cannot be loaded
        if role == SORT_ROLE:
            return self._sort_key(m, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (2, 4, 5):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    @staticmethod
    def _text(m: LocalModel, col: int) -> str:
        info = m.info
        if col == 0:
            suffix = "" if m.complete else "  (incomplete split)"
            if info is None:
                suffix += f"  — {unreadable_reason(m)}"  # Arch says "unreadable"
            return m.name + suffix
        if col == 1:
            return (info.architecture or "") if info else "unreadable"
        if col == 2:
            return human_params(info.parameter_count) if info else ""
        if col == 3:
            return (info.quantization or "") if info else ""
        if col == 4:
            return human_size(m.size)
        if col == 5:
            return f"{info.context_length:,}" if info and info.context_length else ""
        if col == 6:
            return tokenizer_summary(info) if info else ""
        return _location(m)

    @staticmethod
    def _sort_key(m: LocalModel, col: int) -> object:
        info = m.info
        if col == 2:
            return float(info.parameter_count or 0) if info else 0.0
        if col == 4:
            return float(m.size)
        if col == 5:
            return float(info.context_length or 0) if info else 0.0
        return LibraryTableModel._text(m, col).lower()


def unreadable_reason(m: LocalModel) -> str:
    """Why a file cannot be loaded, in a few words (the whole error is the tooltip)."""
    reason = (m.error or "not a GGUF model").strip().rstrip(".")
    head = reason.split(" (", 1)[0]  # "not a GGUF file (starts with b'this', ...)"
    return head if len(head) <= 60 else head[:59] + "…"


def tokenizer_summary(info: ModelInfo) -> str:
    """'gpt2 · 151,936': the tokenizer type and vocabulary size, readable at a glance."""
    vocab = f"{info.vocab_size:,}" if info.vocab_size else ""
    return " · ".join(p for p in (info.tokenizer_model or "", vocab) if p)


class LibraryFilterProxy(QSortFilterProxyModel):
    """Case-insensitive filter over every column; numbers sort as numbers."""

    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)
        self.setSortRole(SORT_ROLE)


def model_folder(model: LocalModel) -> Path:
    return model.path.parent
