"""Search results as a table: repository, downloads, likes, last update."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt

from specula.core.hub.client import RepoSummary
from specula.core.pairing.badges import human_count
from specula.gui.models.row_table import RowTableModel

REPO_ROLE = Qt.ItemDataRole.UserRole + 1
COLUMNS = ("Repository", "Downloads", "Likes", "Updated")


class SearchResultsModel(RowTableModel):
    columns = COLUMNS

    @property
    def results(self) -> list[RepoSummary]:
        return self.rows  # type: ignore[return-value]

    def set_results(self, results: list[RepoSummary]) -> None:
        self.set_rows(results)

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
