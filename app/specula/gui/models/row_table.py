"""A read-only Qt table over a Python list: the shared part of the model pages' tables.

Each row is one Python object; :data:`ROW_ROLE` answers it whole (the views and
pages read the selected object through it) and :meth:`RowTableModel.cell`
answers every other role of a cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

ROW_ROLE = Qt.ItemDataRole.UserRole + 1
"""A cell's whole row object."""


class RowTableModel(QAbstractTableModel):
    """Rows replaced as a whole (on the GUI thread); subclasses answer ``data``."""

    columns: Sequence[str] = ()
    header_tips: Sequence[str] = ()

    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self.rows: list[object] = []

    def set_rows(self, rows: Sequence[object]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        return row if role == ROW_ROLE else self.cell(row, index.column(), role)

    def cell(self, row: object, col: int, role: int) -> object:
        """What ``role`` shows of column ``col`` of ``row`` (None: nothing)."""
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section]
        if role == Qt.ItemDataRole.ToolTipRole and section < len(self.header_tips):
            return self.header_tips[section]
        return None
