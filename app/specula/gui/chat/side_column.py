"""The chat page's right column: live statistics above the reply settings, scrolling.

Its minimum width is its contents' (plus the scroll bar), so it never squeezes the
statistics; the page collapses it as a whole (``ChatPage.set_side_panel``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from specula.gui.chat.presets_dialog import PresetPicker
from specula.gui.chat.settings_panel import SettingsPanel
from specula.gui.context import AppContext
from specula.gui.stats.panel import StatsPanel


class SideColumn(QScrollArea):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setMinimumWidth(300)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QFrame()
        inner.setObjectName("SidePanel")
        lay = QVBoxLayout(inner)
        lay.setContentsMargins(12, 10, 12, 10)
        self.stats_panel = StatsPanel(inner)
        lay.addWidget(self.stats_panel)
        self.settings_panel = SettingsPanel(ctx, inner)
        self.presets = PresetPicker(self.settings_panel, inner)
        lay.addWidget(self.presets)
        lay.addWidget(self.settings_panel)
        lay.addStretch(1)
        self.setWidget(inner)
        bar = self.verticalScrollBar().sizeHint().width()
        self.setMinimumWidth(inner.minimumSizeHint().width() + bar + 2)
