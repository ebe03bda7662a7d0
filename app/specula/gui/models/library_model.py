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
from specula.core.pairing.badges import human_params
from specula.core.pairing.pair_status import PairKind, PairStatus
from specula.core.sizes import byte_size
from specula.gui import theme
from specula.gui.models.row_table import ROW_ROLE, RowTableModel

MODEL_ROLE = ROW_ROLE
SORT_ROLE = Qt.ItemDataRole.UserRole + 2

# Parameters and quantization right after the name: two sizes of one family have names
# that differ only in their middle ("…-0.5b-…" and "…-1.5b-…").
COLUMNS = ("Name", "Params", "Quant", "Size", "With target", "Arch", "Context", "Tokenizer",
           "Location")
PAIRING = COLUMNS.index("With target")
NUMBERS = {COLUMNS.index(c) for c in ("Params", "Size", "Context")}  # right-aligned
HEADER_TIPS = ("File name (with its folder when the same file is in more than one)",
               "Parameters", "Quantization", "On disk (all parts)",
               "As the draft of the loaded target: incompatible, larger than it, or ✓ a draft "
               "for it", "Architecture", "Context length the model was trained for",
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
        self._pairing: dict[str, PairStatus] = {}  # path -> as the loaded target's draft

    def set_pairing(self, statuses: dict[str, PairStatus]) -> None:
        """How each file pairs with the loaded target ({} when none is loaded)."""
        self._pairing = statuses
        if self.rows:
            self.dataChanged.emit(self.index(0, PAIRING), self.index(len(self.rows) - 1, PAIRING))

    def pairing(self, m: LocalModel) -> PairStatus | None:
        return self._pairing.get(str(m.path))

    def set_models(self, models: list[LocalModel]) -> None:
        names = [m.name for m in models]
        self._twins = {n for n in names if names.count(n) > 1}
        self.set_rows(models)

    def name_text(self, m: LocalModel) -> str:
        """The file name; a file found in two folders also names its folder, to tell them apart."""
        text = self._text(m, 0)
        return f"{text}  — {model_folder(m).name}/" if m.name in self._twins else text

    def cell(self, m: LocalModel, col: int, role: int) -> object:  # type: ignore[override]
        if col == PAIRING and role != SORT_ROLE:
            return self._pairing_cell(self.pairing(m), role)
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(m.path) if m.error is None else f"{m.path}\n{m.error}"
        if role == Qt.ItemDataRole.DisplayRole:
            return self.name_text(m) if col == 0 else self._text(m, col)
        if role == Qt.ItemDataRole.ForegroundRole and m.info is None:
            return QColor(theme.palette().muted)  # listed, greyed: it cannot be loaded
        if role == SORT_ROLE:
            return self._sort_key(m, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in NUMBERS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    @staticmethod
    def _pairing_cell(status: PairStatus | None, role: int) -> object:
        if status is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return pairing_text(status)
        if role == Qt.ItemDataRole.ToolTipRole:
            return status.detail
        if role == Qt.ItemDataRole.ForegroundRole and status.kind is PairKind.INCOMPATIBLE:
            return QColor(theme.palette().danger)
        if role == Qt.ItemDataRole.ForegroundRole and not status.usable:
            return QColor(theme.palette().muted)
        return None

    @staticmethod
    def _text(m: LocalModel, col: int) -> str:
        info, column = m.info, COLUMNS[col]
        if column == "Name":
            suffix = "" if m.complete else "  (incomplete split)"
            if info is None:
                suffix += f"  — {unreadable_reason(m)}"  # Arch says "unreadable"
            return m.name + suffix
        if column == "Size":
            return byte_size(m.size)
        if column == "Location":
            return _location(m)
        if info is None:
            return "unreadable" if column == "Arch" else ""
        if column == "Params":  # the count from the header, else the size its name states
            return human_params(info.parameter_count) or info.size_label or ""
        if column == "Quant":
            return info.quantization or ""
        if column == "Arch":
            return info.architecture or ""
        if column == "Context":
            return f"{info.context_length:,}" if info.context_length else ""
        if column == "Tokenizer":
            return tokenizer_summary(info)
        return ""  # "With target": filled by set_pairing

    @staticmethod
    def _sort_key(m: LocalModel, col: int) -> object:
        info, column = m.info, COLUMNS[col]
        if column == "Params":
            return float(info.parameter_count or 0) if info else 0.0
        if column == "Size":
            return float(m.size)
        if column == "Context":
            return float(info.context_length or 0) if info else 0.0
        return LibraryTableModel._text(m, col).lower()


def pairing_text(status: PairStatus) -> str:
    """The cell: '✓ draft for it', '✗ incompatible', 'larger than the target' (the why is the
    cell's tooltip and the details pane's)."""
    if status.usable:
        return "✓ draft for it"
    if status.kind is PairKind.INCOMPATIBLE:
        return "✗ incompatible"
    return status.mark


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
