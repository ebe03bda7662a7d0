"""What the chat page's helpers (the message menu, the context fit, the per-chat system
prompt) may use of the page: its public parts, named here as a Protocol so that the
helpers need not import page.py, which imports them (that would be an import circle)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from specula.core.chat.conversations import Message
    from specula.gui.chat.attach import AttachBar
    from specula.gui.chat.composer import Composer
    from specula.gui.chat.conversation_list import ConversationList
    from specula.gui.chat.message import MessageWidget
    from specula.gui.chat.settings_panel import SettingsPanel
    from specula.gui.chat.transcript import Transcript
    from specula.gui.context import AppContext
    from specula.gui.engine_client import EngineClient


class ChatPageView(Protocol):
    """The chat page as its helpers see it (gui/chat/page.py's ChatPage)."""

    ctx: AppContext
    client: EngineClient
    conversation_id: int | None
    conversations: ConversationList
    editing: MessageWidget | None
    transcript: Transcript
    composer: Composer
    attach_bar: AttachBar
    settings_panel: SettingsPanel

    def open_conversation(self, conversation_id: int) -> None: ...
    def edit_message(self, widget: MessageWidget) -> None: ...
    def context_changed(self) -> None: ...
    def stored_at(self, position: int) -> Message | None: ...
    def show_stored(self, widget: MessageWidget, m: Message, last: bool) -> None: ...
    def cancel_edit(self) -> None: ...
    def update_empty(self) -> None: ...
