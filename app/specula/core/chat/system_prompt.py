"""Each conversation's own system prompt, kept with it (as LM Studio does).

Why: a single panel field shared by every chat meant reopening a chat made
with "You are a helpful assistant." replied with whatever prompt the panel
held last (a preset's "Be terse."). The prompt is part of the conversation:
it is stored in the conversation's settings (``ConversationStore.chat_settings``,
key :data:`KEY`), copied with it (duplicate, branch), and read back when the
chat is opened. A chat that has none stored (a new chat, or one saved before
prompts were kept per chat) starts from its preset's prompt, else the
default prompt of the Settings page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specula.core.chat.conversations import ConversationStore

KEY = "system_prompt"


def stored_prompt(settings: Mapping[str, Any]) -> str | None:
    """The prompt a conversation's settings hold; None when they hold none ("" is a prompt:
    the user emptied it on purpose)."""
    value = settings.get(KEY)
    return value if isinstance(value, str) else None


def starting_prompt(preset_prompt: str | None, default: str) -> str:
    """What a chat without a prompt of its own starts from: its preset's prompt, else the
    default."""
    return preset_prompt if preset_prompt is not None else default


def chat_prompt(settings: Mapping[str, Any], preset_prompt: str | None, default: str) -> str:
    """The system prompt the chat with these settings replies with."""
    own = stored_prompt(settings)
    return own if own is not None else starting_prompt(preset_prompt, default)


def remember_prompt(store: ConversationStore, conversation_id: int, prompt: str) -> None:
    """Keep ``prompt`` as the conversation's own (only this conversation changes)."""
    store.update_chat_settings(conversation_id, **{KEY: prompt})
