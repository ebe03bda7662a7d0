"""The chat page's middle column, laid out: banner, transcript (or the empty state),
tools (token colours, export, panel toggle), the colours' legend, the edit note, "Generate
reply" (while the chat ends in a user message), attachments, the composer with Send and Stop,
and the context bar.

It only builds and holds the widgets; :class:`specula.gui.chat.page.ChatPage`
connects them to the send / regenerate / continue flow.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.chat.conversations import ConversationStore
from specula.gui.chat.attach import AttachBar
from specula.gui.chat.banner import Banner
from specula.gui.chat.colour_switch import ColourSwitch
from specula.gui.chat.composer import Composer
from specula.gui.chat.context_meter import ContextBar
from specula.gui.chat.empty_state import EmptyState
from specula.gui.chat.export_menu import ExportButton
from specula.gui.chat.transcript import Transcript


class ChatColumn(QWidget):
    def __init__(self, store: ConversationStore, colour_mode: str,
                 count_text: Callable[[str], int | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 8)
        self.banner = Banner(self)
        lay.addWidget(self.banner)
        self.centre_stack = QStackedWidget(self)
        self.empty = EmptyState(self)
        self.transcript = Transcript(self)
        self.centre_stack.addWidget(self.empty)
        self.centre_stack.addWidget(self.transcript)
        lay.addWidget(self.centre_stack, 1)
        bottom = QVBoxLayout()
        bottom.setContentsMargins(16, 0, 16, 0)
        bottom.addLayout(self._tools(store, colour_mode))
        bottom.addWidget(self.colours.legend)  # the whole column's width, under the tools
        self.edit_banner = QLabel("Editing a message: sending replaces it and everything after "
                                  "it (Esc cancels).", self)
        self.edit_banner.setObjectName("EditBanner")
        self.edit_banner.setWordWrap(True)
        self.edit_banner.hide()
        bottom.addWidget(self.edit_banner)
        self.generate_button = QPushButton("Generate reply", self)
        self.generate_button.setToolTip("The chat ends in your message: ask the model for a "
                                        "reply to it (or press Enter in the empty box)")
        self.generate_button.hide()  # shown while the chat ends in a user message
        bottom.addWidget(self.generate_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.attach_bar = AttachBar(count_text, self)
        bottom.addWidget(self.attach_bar)
        bottom.addLayout(self._composer_row())
        self.context_bar = ContextBar(self)
        bottom.addWidget(self.context_bar)
        lay.addLayout(bottom)

    def _tools(self, store: ConversationStore, colour_mode: str) -> QHBoxLayout:
        tools = QHBoxLayout()
        self.colours = ColourSwitch(colour_mode, self)
        self.transcript.set_colour_mode(self.colours.mode)
        tools.addWidget(self.colours, 1)
        self.export_button = ExportButton(store, self)
        tools.addWidget(self.export_button, 0, Qt.AlignmentFlag.AlignTop)
        self.panel_button = QToolButton(self)
        self.panel_button.setObjectName("PanelToggle")
        self.panel_button.setCheckable(True)
        self.panel_button.setChecked(True)
        self.panel_button.setText("Hide panel ⟩")
        self.panel_button.setToolTip("Show or hide the statistics and settings panel (Ctrl+])")
        tools.addWidget(self.panel_button, 0, Qt.AlignmentFlag.AlignTop)
        return tools

    def _composer_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.composer = Composer(self)
        row.addWidget(self.composer, 1)
        buttons = QVBoxLayout()
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("Primary")
        buttons.addWidget(self.send_button)
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setObjectName("Danger")
        self.stop_button.setToolTip("Stop the reply (Esc); the text so far is kept")
        buttons.addWidget(self.stop_button)
        row.addLayout(buttons)
        return row
