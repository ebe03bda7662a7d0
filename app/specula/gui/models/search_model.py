"""Search results as a table: repository, downloads, likes, last update."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from specula.core.hub import RepoSummary
from specula.core.model_badges import human_count

REPO_ROLE = Qt.ItemDataRole.UserRole + 1
COLUMNS = ("Repository", "Downloads", "Likes", "Updated")


class SearchResultsModel(QAbstractTableModel):
    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self.results: list[RepoSummary] = []

    def set_results(self, results: list[RepoSummary]) -> None:
        self.beginResetModel()
        self.results = list(results)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.results)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        r = self.results[index.row()]
        col = index.column()
        if role == REPO_ROLE:
            return r
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return r.repo_id
            if col == 1:
                return human_count(r.downloads)
            if col == 2:
                return human_count(r.likes)
            return (r.last_modified or "")[:10]
        if role == Qt.ItemDataRole.ToolTipRole and col == 0:
            return ", ".join(r.tags[:12]) if r.tags else r.repo_id
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (1, 2):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None
