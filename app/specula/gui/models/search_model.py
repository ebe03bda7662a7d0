"""Search results as a table: repository, downloads, likes, last update."""

from __future__ import annotations

from PySide6.QtCore import Qt

from specula.core.hub.client import RepoSummary
from specula.core.pairing.badges import human_count
from specula.gui.models.row_table import ROW_ROLE, RowTableModel

REPO_ROLE = ROW_ROLE
COLUMNS = ("Repository", "Downloads", "Likes", "Updated")


class SearchResultsModel(RowTableModel):
    columns = COLUMNS

    @property
    def results(self) -> list[RepoSummary]:
        return self.rows  # type: ignore[return-value]

    def set_results(self, results: list[RepoSummary]) -> None:
        self.set_rows(results)

    def cell(self, r: RepoSummary, col: int, role: int) -> object:  # type: ignore[override]
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
