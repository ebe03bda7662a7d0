"""A repository's GGUF models as a table with fit and compatibility badges.

One row per model (a split model's parts grouped into one row). The badges
start as a spinner ("reading header") and are filled as the headers arrive
from the background; a header that cannot be read shows why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import RemoteModel
from specula.core.pairing.badges import READING, Badge, FileBadges, error_badge
from specula.core.sizes import byte_size
from specula.gui.models.badge_delegate import BADGE_ROLE, BadgeDelegate
from specula.gui.models.row_table import ROW_ROLE, RowTableModel

FILE_ROLE = ROW_ROLE
COLUMNS = ("File", "Size", "Quant", "Fit", "Pairing")
FIT_COL, PAIR_COL = 3, 4


@dataclass
class FileRow:
    model: RemoteModel
    info: ModelInfo | None = None
    badges: FileBadges | None = None
    error: str | None = None
    local: bool = False  # already in the library

    @property
    def busy(self) -> bool:
        return self.badges is None and self.error is None

    def label(self) -> str:
        name = PurePosixPath(self.model.filename).name
        if self.model.split:
            parts = len(self.model.files)
            name += f"  [{parts} parts{'' if self.model.complete else ', incomplete'}]"
        if self.local:
            name += "  (in library)"
        return name


class RepoFilesModel(RowTableModel):
    columns = COLUMNS
    rows: list[FileRow]  # type: ignore[assignment]

    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)
        self.loaded_name = ""  # the loaded target the compatibility column compares with
        self.spinner_frame = 0
        self._spin = QTimer(self)
        self._spin.setInterval(100)
        self._spin.timeout.connect(self._tick)

    def set_models(self, models: list[RemoteModel], local: set[str] | None = None) -> None:
        self.set_rows([FileRow(m, local=m.filename in (local or set())) for m in models])
        self._update_spinner()

    def row_for(self, filename: str) -> int:
        for i, row in enumerate(self.rows):
            if row.model.filename == filename:
                return i
        return -1

    def set_info(self, filename: str, info: ModelInfo | None, badges: FileBadges | None,
                 error: str | None = None) -> None:
        i = self.row_for(filename)
        if i < 0:
            return
        row = self.rows[i]
        row.info, row.badges, row.error = info or row.info, badges, error
        if info is not None and info.quantization:
            row.model.quantization = info.quantization
        self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1))
        self._update_spinner()

    def mark_busy(self) -> None:
        """Badges are being recomputed (a new target, draft or context length)."""
        for row in self.rows:
            if row.error is None:
                row.badges = None
        if self.rows:
            self.dataChanged.emit(self.index(0, FIT_COL), self.index(len(self.rows) - 1, PAIR_COL))
        self._update_spinner()

    def busy_count(self) -> int:
        return sum(1 for r in self.rows if r.busy)

    def _update_spinner(self) -> None:
        if self.busy_count():
            if not self._spin.isActive():
                self._spin.start()
        else:
            self._spin.stop()

    def _tick(self) -> None:
        self.spinner_frame += 1
        if self.rows:
            self.dataChanged.emit(self.index(0, FIT_COL), self.index(len(self.rows) - 1, PAIR_COL),
                                  [BADGE_ROLE])

    # -- Qt model -------------------------------------------------------------------
    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation != Qt.Orientation.Horizontal or role != Qt.ItemDataRole.ToolTipRole:
            return super().headerData(section, orientation, role)
        if section == PAIR_COL:
            return (f"Compatibility with {self.loaded_name}, the loaded target" if self.loaded_name
                    else "No target is loaded")
        if section == FIT_COL:
            return ("Fit on this machine at the chosen context length: as the draft of the "
                    "loaded target when it would draft for it, else as the target with the "
                    "loaded draft")
        return None

    def set_loaded_name(self, name: str) -> None:
        if name != self.loaded_name:
            self.loaded_name = name
            self.headerDataChanged.emit(Qt.Orientation.Horizontal, PAIR_COL, PAIR_COL)

    def badge(self, row: FileRow, col: int) -> Badge:
        if row.error is not None:
            return error_badge(row.error)
        if row.badges is None:
            return READING
        return row.badges.fit if col == FIT_COL else row.badges.pair

    def cell(self, row: FileRow, col: int, role: int) -> object:  # type: ignore[override]
        if col in (FIT_COL, PAIR_COL):
            badge = self.badge(row, col)
            if role == BADGE_ROLE:
                return badge
            if role == Qt.ItemDataRole.DisplayRole:
                return badge.text
            if role == Qt.ItemDataRole.ToolTipRole:
                return badge.detail
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return row.label()
            if col == 1:
                return byte_size(row.model.total_size)
            return row.model.quantization or "?"
        if role == Qt.ItemDataRole.ToolTipRole and col == 0:
            return "\n".join(f.path for f in row.model.files)
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 1:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class RepoFilesView(QTableView):
    def __init__(self, model: RepoFilesModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("RepoFiles")
        self.setModel(model)
        delegate = BadgeDelegate(self)
        self.setItemDelegateForColumn(FIT_COL, delegate)
        self.setItemDelegateForColumn(PAIR_COL, delegate)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(30)
        self.setShowGrid(False)
        self.setWordWrap(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col, width in ((FIT_COL, 150), (PAIR_COL, 140)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)

    def selected_row(self) -> FileRow | None:
        index = self.currentIndex()
        row = index.data(FILE_ROLE) if index.isValid() else None
        return row if isinstance(row, FileRow) else None
