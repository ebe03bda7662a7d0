"""The messages a reply is asked for: attachments expanded, the overflow policy applied.

The page calls :meth:`ChatContext.messages_for_reply` before it asks the engine;
the chat's policy and what its previous reply left out come from the
conversation's settings in the store, and what this reply leaves out is
written back there and shown (the note under the composer, the messages
marked in the transcript).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specula.core.chat.attachments import Attachment, with_attachments
from specula.core.chat.overflow import (
    DEFAULT_POLICY,
    ChatMessage,
    ContextFull,
    Fitted,
    OverflowPolicy,
    fit,
    policy_from,
)
from specula.gui.chat.context_meter import ContextBar, ContextMeter, debounce
from specula.gui.chat.message import MessageWidget

if TYPE_CHECKING:
    from specula.gui.chat.page import ChatPage

__all__ = ["ChatContext", "ContextFull", "chat_messages"]


def chat_messages(system: str, widgets: Sequence[MessageWidget]) -> list[ChatMessage]:
    """Role/content messages as the model reads them (attached files before the text)."""
    out: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    for w in widgets:
        attached: list[Attachment] = getattr(w, "attachments", [])
        out.append({"role": w.role, "content": with_attachments(w.text, attached)})
    return out


class ChatContext:
    """The page's meter, context bar and overflow policy, kept together."""

    def __init__(self, page: ChatPage, meter: ContextMeter, bar: ContextBar) -> None:
        self.page = page
        self.meter = meter
        self.bar = bar
        self.conversation_tokens: int | None = None
        self._recount = debounce(bar, self.recount)
        self._typed = debounce(bar, self.show)
        page.composer.textChanged.connect(self._typed.start)
        meter.ready_changed.connect(lambda _r: self.recount())
        bar.policy_changed.connect(self.set_policy)

    # -- the chat's settings ------------------------------------------------------
    def policy(self) -> OverflowPolicy:
        cid = self.page.conversation_id
        raw = self.page.ctx.store.chat_settings(cid).get("overflow") if cid is not None else None
        return policy_from(raw) if raw is not None else OverflowPolicy(self.bar.policy.currentData())

    def set_policy(self, policy: OverflowPolicy) -> None:
        cid = self.page.conversation_id
        if cid is not None:
            # A new policy starts from the whole conversation again.
            self.page.ctx.store.update_chat_settings(cid, overflow=policy.value, left_out=None,
                                                     start=None)
        # ... and so does the note: nothing is left out until a reply under it leaves
        # something out (never, under "stop at the limit").
        self.show_left_out(0, 0)
        self.changed()

    def opened(self) -> None:
        """A conversation was opened (or a new chat started)."""
        cid = self.page.conversation_id
        settings = self.page.ctx.store.chat_settings(cid) if cid is not None else {}
        self.bar.set_policy(policy_from(settings.get("overflow", DEFAULT_POLICY.value)))
        self.show_left_out(int(settings.get("left_out", 0) or 0), int(settings.get("start", 0) or 0))
        self.recount()

    def changed(self) -> None:
        """The messages changed: recount soon."""
        self._recount.start()

    # -- a reply -------------------------------------------------------------------
    def messages_for_reply(self, messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]:
        """``messages`` within the context under the chat's policy; raises ContextFull."""
        if not self.meter.ready:
            return messages  # no counter yet: sent whole (the engine refuses what cannot fit)
        cid = self.page.conversation_id
        settings = self.page.ctx.store.chat_settings(cid) if cid is not None else {}
        keep_out = int(settings.get("left_out", 0) or 0)
        fitted = fit(messages, self.policy(), self.meter.budget(max_tokens), self.meter.count,
                     keep_out=keep_out)
        self._remember(fitted, messages)
        return fitted.messages

    def _remember(self, fitted: Fitted, messages: list[ChatMessage]) -> None:
        n_sys = sum(1 for m in messages[:1] if m.get("role") == "system")
        start = max(fitted.start - n_sys, 0)
        cid = self.page.conversation_id
        if cid is not None:
            self.page.ctx.store.update_chat_settings(
                cid, left_out=fitted.left_out or None, start=start if fitted.left_out else None)
        self.show_left_out(fitted.left_out, start)
        self.conversation_tokens = fitted.tokens
        self.show()

    def show_left_out(self, n: int, start: int) -> None:
        self.bar.show_left_out(n)
        self.page.transcript.mark_left_out(n, start)

    # -- the counter ---------------------------------------------------------------
    def recount(self) -> None:
        """Count the conversation as it would be sent now (its left-out part excluded)."""
        page = self.page
        if not self.meter.ready or not page.transcript.messages:
            self.conversation_tokens = 0 if self.meter.ready else None
            self.show()
            return
        kept = [w for w in page.transcript.messages if not w.left_out]
        system = page.settings_panel.system_prompt.toPlainText().strip()
        self.conversation_tokens = self.meter.count(chat_messages(system, kept))
        self.show()

    def show(self) -> None:
        page = self.page
        if not self.meter.ready:
            self.bar.show_count(None, 0, 0)
            return
        typed = self.meter.count_text(page.composer.toPlainText())
        typed += sum(self.meter.count_text(a.text) for a in page.attach_bar.pending)
        self.bar.show_count(self.conversation_tokens or 0, typed, self.meter.n_ctx)
