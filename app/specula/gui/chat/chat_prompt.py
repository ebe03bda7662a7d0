"""The panel's system prompt field, bound to the open chat.

Opening a chat shows its own prompt (:mod:`specula.core.chat.system_prompt`
decides which); editing the field, or picking a preset, changes the open chat's
prompt only; a new chat starts from the current preset's prompt, else the
default of the Settings page, and keeps it once its first message is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from specula.core.chat import presets
from specula.core.chat.system_prompt import chat_prompt, remember_prompt

if TYPE_CHECKING:
    from specula.gui.chat.page import ChatPage


class ChatPromptBinding(QObject):
    def __init__(self, page: ChatPage) -> None:
        super().__init__(page)
        self.page = page
        self._showing = False  # set while a chat's prompt is put in the field
        page.settings_panel.system_prompt.textChanged.connect(self._edited)

    @property
    def text(self) -> str:
        return self.page.settings_panel.system_prompt.toPlainText()

    def opened(self, conversation_id: int | None, preset_name: str) -> None:
        """Show the prompt of the chat just opened (None: a new chat with this preset)."""
        store = self.page.ctx.store
        settings = store.chat_settings(conversation_id) if conversation_id is not None else {}
        preset = presets.find(preset_name) if preset_name else None
        prompt = chat_prompt(settings, preset.system_prompt if preset else None,
                             self.page.ctx.settings.generation.system_prompt)
        if prompt == self.text:
            return
        self._showing = True
        try:
            self.page.settings_panel.system_prompt.setPlainText(prompt)
        finally:
            self._showing = False

    def keep(self, conversation_id: int) -> None:
        """A chat was created: it keeps the prompt it was started with."""
        remember_prompt(self.page.ctx.store, conversation_id, self.text)

    def _edited(self) -> None:
        cid = self.page.conversation_id
        if not self._showing and cid is not None:
            remember_prompt(self.page.ctx.store, cid, self.text)
