"""The chat page's three columns: conversations | chat | statistics and settings.

The conversation list can be dragged shut; the right column collapses as a
whole (:meth:`ChatSplit.set_side_open`) and comes back at the width it had, so
the chat column keeps its room in small windows.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget


class ChatSplit(QSplitter):
    def __init__(self, left: QWidget, centre: QWidget, side: QWidget,
                 parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self._side = side
        self._side_width = 300
        for i, (w, stretch, collapsible) in enumerate(
                [(left, 0, True), (centre, 1, False), (side, 0, True)]):
            self.addWidget(w)
            self.setStretchFactor(i, stretch)
            self.setCollapsible(i, collapsible)
        self.setSizes([170, 700, self._side_width])

    @property
    def side_open(self) -> bool:
        return not self._side.isHidden()

    def set_side_open(self, open_: bool) -> None:
        """Hide the right column (remembering its width) or show it again at that width."""
        if not open_:
            self._side_width = max(self.sizes()[2], self._side.minimumWidth())
        self._side.setVisible(open_)
        if open_:
            sizes = self.sizes()
            sizes[1] = max(sizes[1] - self._side_width, 200)
            sizes[2] = self._side_width
            self.setSizes(sizes)
