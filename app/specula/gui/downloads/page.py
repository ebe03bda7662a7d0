"""The Downloads page: every download with its progress, speed, ETA, final state and buttons.

The rows are views over the manager's :class:`DownloadListModel` (the one
source of truth, changed only on the GUI thread); each row has its own
Pause / Resume / Cancel / Show in folder / Remove buttons, so nothing acts on
"the selected row". The page announces how many downloads run so the
navigation shows a badge from every page.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specula.core.hub.download import DownloadState
from specula.gui.context import AppContext
from specula.gui.downloads.row import DownloadRow
from specula.gui.page_header import page_layout


class DownloadsPage(QWidget):
    nav_badge_changed = Signal(str)
    """The text the navigation shows next to "Downloads" ("" when nothing runs)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.manager = ctx.downloads
        self.rows: list[DownloadRow] = []
        lay, head = page_layout(self, "Downloads")
        self.summary = QLabel("", self)
        self.summary.setObjectName("Muted")
        head.addWidget(self.summary, 1)
        self.clear_button = QPushButton("Clear finished", self)
        self.clear_button.setToolTip("Remove done, failed and cancelled downloads from the list")
        self.clear_button.clicked.connect(self.manager.clear_finished)
        head.addWidget(self.clear_button)
        self.scroll = QScrollArea(self)
        self.scroll.setObjectName("DownloadList")
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        self.row_layout = QVBoxLayout(inner)
        self.row_layout.setContentsMargins(0, 0, 0, 0)
        self.row_layout.setSpacing(8)
        self.row_layout.addStretch(1)
        self.scroll.setWidget(inner)
        lay.addWidget(self.scroll, 1)
        self.empty = QLabel("No downloads yet. Find a model on the Discover page.", self)
        self.empty.setObjectName("Muted")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(self.empty)

        m = self.manager.model
        for sig in (m.rowsInserted, m.rowsRemoved, m.modelReset):
            sig.connect(self._rebuild)
        m.dataChanged.connect(self._changed)
        self.manager.active_count_changed.connect(self._on_active)
        self._rebuild()

    # -- rows -------------------------------------------------------------------------
    def row(self, repo_id: str, filename: str) -> DownloadRow | None:
        """The row that shows this download (None when it is not listed)."""
        return next((r for r in self.rows if r.key == (repo_id, filename)), None)

    def select(self, repo_id: str, filename: str) -> None:
        """Scroll this download's row into view."""
        row = self.row(repo_id, filename)
        if row is not None:
            self.scroll.ensureWidgetVisible(row)

    def _rebuild(self, *_args: object) -> None:
        for r in self.rows:
            self.row_layout.removeWidget(r)
            r.hide()  # gone now, not when the event loop gets to the deletion
            r.deleteLater()
        self.rows = []
        for item in self.manager.model.items:
            r = DownloadRow(item)
            r.action_requested.connect(self._act)
            self.row_layout.insertWidget(len(self.rows), r)
            self.rows.append(r)
        self._changed()

    def _changed(self, first: QModelIndex | None = None, last: QModelIndex | None = None,
                 *_args: object) -> None:
        items = self.manager.model.items
        if len(items) != len(self.rows):
            self._rebuild()
            return
        lo = first.row() if first is not None and first.isValid() else 0
        hi = last.row() if last is not None and last.isValid() else len(items) - 1
        for i in range(max(lo, 0), min(hi, len(items) - 1) + 1):
            item = items[i]
            self.rows[i].update_item(item, self.manager.is_running(*item.record.key))
        self._refresh_summary()

    def _act(self, action: str, repo_id: str, filename: str) -> None:
        m = self.manager
        if action == "pause":
            m.pause(repo_id, filename)
        elif action == "resume":
            m.resume(repo_id, filename)
        elif action == "cancel":
            m.cancel(repo_id, filename)
        elif action == "remove":
            m.remove(repo_id, filename)
        elif action == "reveal":
            item = m.item(repo_id, filename)
            if item is not None and item.record.path:
                QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(item.record.path).parent)))

    # -- summary ----------------------------------------------------------------------
    def _on_active(self, count: int) -> None:
        self.nav_badge_changed.emit(f"{count}" if count else "")
        self._changed()

    def _refresh_summary(self) -> None:
        items = self.manager.model.items
        self.empty.setVisible(not items)
        self.scroll.setVisible(bool(items))
        active = self.manager.model.active_count()
        paused = sum(1 for i in items if i.state is DownloadState.PAUSED)
        bits = [f"{active} running" if active else "", f"{paused} paused" if paused else ""]
        self.summary.setText("   " + " · ".join(b for b in bits if b))
        self.clear_button.setEnabled(any(not i.active and i.state is not DownloadState.PAUSED
                                         for i in items))
