"""The downloads list as a Qt model (qutebrowser's ``DownloadModel`` in spirit).

Each row is a :class:`DownloadItem`: the persisted record plus the live
numbers (speed, ETA). Rows are added, changed and removed only on the GUI
thread, by the :class:`~specula.gui.downloads.manager.DownloadManager`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt

from specula.core.hub.download import DownloadState
from specula.core.hub.download_records import DownloadRecord
from specula.core.pairing.badges import human_duration
from specula.core.sizes import byte_size

ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
STATE_ROLE = Qt.ItemDataRole.UserRole + 2
FRACTION_ROLE = Qt.ItemDataRole.UserRole + 3
STATUS_ROLE = Qt.ItemDataRole.UserRole + 4

ACTIVE = (DownloadState.PENDING, DownloadState.RUNNING, DownloadState.VERIFYING)


@dataclass
class DownloadItem:
    record: DownloadRecord
    speed: float = 0.0
    eta: float | None = None
    part: int = 1
    parts: int = 1

    @property
    def state(self) -> DownloadState:
        return DownloadState(self.record.state)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def title(self) -> str:
        return f"{PurePosixPath(self.record.filename).name}"

    @property
    def fraction(self) -> float:
        size = self.record.size
        return min(self.record.downloaded / size, 1.0) if size else 0.0

    def status_text(self) -> str:
        """The line under the title: what the download is doing, or how it ended."""
        r, state = self.record, self.state
        got = f"{byte_size(r.downloaded)} of {byte_size(r.size)}"
        if state is DownloadState.PENDING:
            return "Waiting to start…"
        if state is DownloadState.RUNNING:
            part = f" · part {self.part} of {self.parts}" if self.parts > 1 else ""
            speed = f"{byte_size(self.speed)}/s" if self.speed > 0 else "starting…"
            return f"{got} · {speed} · {human_duration(self.eta)} left{part}"
        if state is DownloadState.VERIFYING:
            return f"Checking the sha256 checksum… ({byte_size(r.size)})"
        if state is DownloadState.PAUSED:
            return f"Paused at {got} ({self.fraction:.0%}); Resume continues where it stopped"
        if state is DownloadState.DONE:
            return f"Done: {byte_size(r.size)}, checksum verified · {r.path}"
        if state is DownloadState.CANCELLED:
            return "Cancelled; the incomplete file was deleted"
        return f"Failed: {r.message}"


class DownloadListModel(QAbstractListModel):
    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self.items: list[DownloadItem] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.items)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.items):
            return None
        item = self.items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{item.record.repo_id}/{item.record.filename}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{item.record.repo_id}/{item.record.filename}\n{item.status_text()}"
        if role == ITEM_ROLE:
            return item
        if role == STATE_ROLE:
            return item.state.value
        if role == FRACTION_ROLE:
            return item.fraction
        if role == STATUS_ROLE:
            return item.status_text()
        return None

    # -- mutations (GUI thread only) -------------------------------------------
    def find(self, key: tuple[str, str]) -> int:
        for row, item in enumerate(self.items):
            if item.record.key == key:
                return row
        return -1

    def add(self, item: DownloadItem) -> int:
        row = len(self.items)
        self.beginInsertRows(QModelIndex(), row, row)
        self.items.append(item)
        self.endInsertRows()
        return row

    def changed(self, row: int) -> None:
        index = self.index(row)
        self.dataChanged.emit(index, index)

    def remove(self, row: int) -> None:
        self.beginRemoveRows(QModelIndex(), row, row)
        del self.items[row]
        self.endRemoveRows()

    def active_count(self) -> int:
        return sum(1 for i in self.items if i.active)
