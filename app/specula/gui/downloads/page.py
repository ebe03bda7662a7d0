"""The Downloads page: every download with its progress, speed, ETA and final state.

The list is a view over the manager's :class:`DownloadListModel`; a delegate
draws each row (title, a progress bar, the status line: speed and ETA while
running, "checking the checksum", done, failed with the reason, cancelled).
The buttons act on the selected row. The page announces how many downloads
run so the navigation shows a badge from every page.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QFont, QPainter
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from specula.core.hub.download import DownloadState
from specula.core.pairing.badges import Tone
from specula.gui import theme
from specula.gui.context import AppContext
from specula.gui.downloads.model import ITEM_ROLE, DownloadItem
from specula.gui.models.badges import tone_colours

ROW_HEIGHT = 74
_STATE_TONES = {DownloadState.DONE: Tone.GOOD, DownloadState.FAILED: Tone.BAD,
                DownloadState.CANCELLED: Tone.NEUTRAL, DownloadState.PAUSED: Tone.OK,
                DownloadState.VERIFYING: Tone.BUSY, DownloadState.RUNNING: Tone.BUSY,
                DownloadState.PENDING: Tone.NEUTRAL}
_STATE_WORDS = {DownloadState.DONE: "done", DownloadState.FAILED: "failed",
                DownloadState.CANCELLED: "cancelled", DownloadState.PAUSED: "paused",
                DownloadState.VERIFYING: "checksum", DownloadState.RUNNING: "downloading",
                DownloadState.PENDING: "waiting"}


_BAR_COLOURS = {DownloadState.DONE: "#2f9e64", DownloadState.PAUSED: "#c8a13a",
                DownloadState.FAILED: "#c0504d"}


class DownloadDelegate(QStyledItemDelegate):
    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        item = index.data(ITEM_ROLE)
        if not isinstance(item, DownloadItem):
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget  # type: ignore[attr-defined]
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect: QRect = option.rect.adjusted(14, 8, -14, -8)  # type: ignore[attr-defined]
        painter.save()
        state = item.state
        # state pill on the right
        bg, fg = tone_colours(_STATE_TONES[state])
        word = _STATE_WORDS[state]
        metrics = painter.fontMetrics()
        pill_w = metrics.horizontalAdvance(word) + 16
        pill = QRect(rect.right() - pill_w, rect.top(), pill_w, metrics.height() + 4)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(bg)
        painter.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
        painter.setPen(fg)
        painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, word)
        # title and repository
        bold = QFont(painter.font())
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(QColor(theme.palette().text))
        title_rect = QRect(rect.left(), rect.top(), rect.width() - pill_w - 12, metrics.height() + 4)
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignVCenter, item.title)
        title_w = painter.fontMetrics().horizontalAdvance(item.title) + 10
        painter.setFont(option.font)  # type: ignore[attr-defined]
        painter.setPen(QColor(theme.palette().muted))
        painter.drawText(title_rect.adjusted(title_w, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(item.record.repo_id, Qt.TextElideMode.ElideRight,
                                            max(title_rect.width() - title_w, 0)))
        # progress bar (drawn here: a style sheet does not reach a delegate's bar)
        bar = QRect(rect.left(), rect.top() + metrics.height() + 10, rect.width(), 8)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(tone_colours(Tone.NEUTRAL)[0])
        painter.drawRoundedRect(bar, 4, 4)
        fraction = 0.0 if state is DownloadState.CANCELLED else item.fraction
        if fraction > 0:
            fill = QRect(bar.left(), bar.top(), max(int(bar.width() * fraction), 8), bar.height())
            painter.setBrush(QColor(_BAR_COLOURS.get(state, "#6c5ce7")))
            painter.drawRoundedRect(fill, 4, 4)
        bar_rect = bar
        # status line
        status_rect = QRect(rect.left(), bar_rect.bottom() + 5, rect.width(), metrics.height() + 2)
        colour = tone_colours(Tone.BAD)[1] if state is DownloadState.FAILED else QColor(
            theme.palette().muted)
        painter.setPen(colour)
        painter.drawText(status_rect, Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(item.status_text(), Qt.TextElideMode.ElideMiddle,
                                            status_rect.width()))
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        return QSize(400, ROW_HEIGHT)


class DownloadsPage(QWidget):
    nav_badge_changed = Signal(str)
    """The text the navigation shows next to "Downloads" ("" when nothing runs)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.manager = ctx.downloads
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 16, 24, 16)
        head = QHBoxLayout()
        title = QLabel("Downloads", self)
        title.setObjectName("PageTitle")
        head.addWidget(title)
        self.summary = QLabel("", self)
        self.summary.setObjectName("Muted")
        head.addWidget(self.summary, 1)
        lay.addLayout(head)
        self.list = QListView(self)
        self.list.setObjectName("DownloadList")
        self.list.setModel(self.manager.model)
        self.list.setItemDelegate(DownloadDelegate(self.list))
        self.list.setUniformItemSizes(True)
        self.list.setSelectionMode(QListView.SelectionMode.SingleSelection)
        lay.addWidget(self.list, 1)
        self.empty = QLabel("No downloads yet. Find a model on the Discover page.", self)
        self.empty.setObjectName("Muted")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(self.empty)
        row = QHBoxLayout()
        self.pause_button = self._button("Pause", self.pause_selected, row)
        self.resume_button = self._button("Resume", self.resume_selected, row)
        self.cancel_button = self._button("Cancel", self.cancel_selected, row, "Danger")
        self.reveal_button = self._button("Show in folder", self.reveal_selected, row)
        row.addStretch(1)
        self.remove_button = self._button("Remove from list", self.remove_selected, row)
        self.clear_button = self._button("Clear finished", self.manager.clear_finished, row)
        lay.addLayout(row)

        m = self.manager.model
        for sig in (m.rowsInserted, m.rowsRemoved, m.dataChanged, m.modelReset):
            sig.connect(self._refresh)
        self.list.selectionModel().currentChanged.connect(self._refresh)
        self.manager.active_count_changed.connect(self._on_active)
        self._refresh()

    def _button(self, text: str, slot: object, row: QHBoxLayout, name: str = "") -> QPushButton:
        b = QPushButton(text, self)
        if name:
            b.setObjectName(name)
        b.clicked.connect(slot)
        row.addWidget(b)
        return b

    # -- selection -----------------------------------------------------------------
    def selected(self) -> DownloadItem | None:
        item = self.list.currentIndex().data(ITEM_ROLE)
        return item if isinstance(item, DownloadItem) else None

    def select(self, repo_id: str, filename: str) -> None:
        row = self.manager.model.find((repo_id, filename))
        if row >= 0:
            self.list.setCurrentIndex(self.manager.model.index(row))

    def pause_selected(self) -> None:
        if (item := self.selected()) is not None:
            self.manager.pause(*item.record.key)

    def resume_selected(self) -> None:
        if (item := self.selected()) is not None:
            self.manager.resume(*item.record.key)

    def cancel_selected(self) -> None:
        if (item := self.selected()) is not None:
            self.manager.cancel(*item.record.key)

    def remove_selected(self) -> None:
        if (item := self.selected()) is not None:
            self.manager.remove(*item.record.key)

    def reveal_selected(self) -> None:
        item = self.selected()
        if item is not None and item.record.path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(item.record.path).parent)))

    # -- view -----------------------------------------------------------------------
    def _on_active(self, count: int) -> None:
        self.nav_badge_changed.emit(f"{count}" if count else "")
        self._refresh()

    def _refresh(self, *_args: object) -> None:
        items = self.manager.model.items
        self.empty.setVisible(not items)
        active = self.manager.model.active_count()
        paused = sum(1 for i in items if i.state is DownloadState.PAUSED)
        bits = [f"{active} running" if active else "", f"{paused} paused" if paused else ""]
        self.summary.setText("   " + " · ".join(b for b in bits if b))
        item = self.selected()
        state = item.state if item else None
        running = item is not None and self.manager.is_running(*item.record.key)
        self.pause_button.setEnabled(running and state is not DownloadState.VERIFYING)
        self.resume_button.setEnabled(state in (DownloadState.PAUSED, DownloadState.FAILED,
                                                DownloadState.CANCELLED))
        self.resume_button.setText("Retry" if state in (DownloadState.FAILED,
                                                        DownloadState.CANCELLED) else "Resume")
        self.cancel_button.setEnabled(running or state in (DownloadState.PAUSED,
                                                           DownloadState.FAILED))
        self.reveal_button.setEnabled(state is DownloadState.DONE)
        self.remove_button.setEnabled(item is not None and not item.active)
        self.clear_button.setEnabled(any(not i.active and i.state is not DownloadState.PAUSED
                                         for i in items))
