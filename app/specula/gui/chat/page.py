"""The chat page: the flow of a conversation (send, reply, regenerate, continue, edit,
versions) over its widgets.

The layout lives apart: the model bar on top (:mod:`model_bar`), then three
columns (:mod:`chat_split`: conversations, the chat column of :mod:`chat_column`,
the statistics and settings of :mod:`side_column`). The right panel collapses
(button or Ctrl+]). Problems go to a dismissible banner at the top of the chat
column; before any conversation the column shows what to do first. What a
finished reply stores is worked out in :mod:`finished_reply`.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QVBoxLayout,
    QWidget,
)

from specula.core.chat import versions
from specula.core.chat.attachments import attachments_of
from specula.core.chat.conversations import Message, title_from
from specula.core.engine.events import Done
from specula.core.engine.sampling.rules import AcceptanceRule
from specula.core.pairing.heads import HEAD_LABELS
from specula.gui.chat.attach import chip_text
from specula.gui.chat.chat_column import ChatColumn
from specula.gui.chat.chat_prompt import ChatPromptBinding
from specula.gui.chat.chat_split import ChatSplit
from specula.gui.chat.context_fit import ChatContext, ContextFull, chat_messages
from specula.gui.chat.context_meter import ContextMeter
from specula.gui.chat.conversation_list import ConversationList
from specula.gui.chat.finished_reply import finish, shown_version, stored_meta
from specula.gui.chat.load_defaults import LoadDefaultsHook
from specula.gui.chat.message import MessageWidget
from specula.gui.chat.message_menu import MessageActions
from specula.gui.chat.model_bar import ModelBar
from specula.gui.chat.reply_notes import (
    SAME_TEXT_SENTENCES,
    SAME_TEXT_TITLE,
    can_continue,
    needs_reply,
    same_as_earlier,
)
from specula.gui.chat.side_column import SideColumn
from specula.gui.context import AppContext
from specula.gui.engine_worker import ReplyBatch, ReplyHandle
from specula.gui.errors import show_error
from specula.gui.models.folder_offers import FolderOffers
from specula.gui.stats.footer import footer_text

REFUSED = "refused"  # the banner's topic for a reply the context refused


class ChatPage(QWidget):
    reply_finished = Signal(object)
    """A reply ended and was saved (its Done)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.client = ctx.engine
        self.conversation_id: int | None = None
        self.reply: ReplyHandle | None = None
        self.reply_widget: MessageWidget | None = None
        self.editing: MessageWidget | None = None
        self._earlier: list[dict[str, Any]] = []  # versions the reply in flight keeps
        self._continuing: Message | None = None  # the stored reply being continued

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        self.model_bar = ModelBar(ctx, self)
        outer.addWidget(self.model_bar)
        self.conversations = ConversationList(ctx.store, self)
        self.conversations.setMinimumWidth(150)
        self.splitter = ChatSplit(self.conversations, self._centre(), self._side(), self)
        outer.addWidget(self.splitter, 1)
        if not self.settings_panel.session.side_panel_open:
            self.set_side_panel(False)

        self.load_defaults = LoadDefaultsHook(ctx, self._set_mode, self)
        # The context the target runs with, as the engine reports it at load.
        self.meter = ContextMeter(self.client, lambda: self.client.n_ctx or self.load_defaults.n_ctx,
                                  self)
        self.context = ChatContext(self, self.meter, self.context_bar)
        self.actions = MessageActions(self)
        self.chat_prompt = ChatPromptBinding(self)  # the system prompt is the open chat's own
        self.side.presets.picked.connect(self._preset_picked)
        self.conversations.selected.connect(self.open_conversation)
        self.conversations.new_requested.connect(self.new_chat)
        self.conversations.deleted.connect(self._on_deleted)
        self.client.busy_changed.connect(self._set_busy)
        self.client.target_loaded.connect(lambda _i: self._engine_info())
        self.client.target_loaded.connect(lambda _i: self.update_empty())
        self.client.target_unloaded.connect(self.update_empty)
        self.client.draft_loaded.connect(lambda *_a: self.update_empty())
        self.client.draft_unloaded.connect(self.update_empty)
        self.client.head_loaded.connect(lambda *_a: self.update_empty())  # a head drafts too
        self.client.head_unloaded.connect(self.update_empty)
        self.client.load_started.connect(lambda *_a: self.update_empty())
        self.client.load_failed.connect(lambda *_a: self.update_empty())
        self.client.load_cancelled.connect(lambda *_a: self.update_empty())
        self.model_bar.problem.connect(self.banner.show_message)
        self.model_bar.problem_cleared.connect(self.banner.hide)
        self.model_bar.pause_shown.connect(self.stats_panel.set_pause)  # one verdict, both places
        self.model_bar.head_changed.connect(self._head_changed)
        self.settings_panel.spec.changed.connect(self._sync_lookup)
        self.model_bar.server_chip.follow(  # the local server answers with this chat's settings
            lambda: (self.settings_panel.sampling(),
                     self.settings_panel.spec_config(self.model_bar.speculating)),
            [self.settings_panel.changed, self.model_bar.draft_switch_toggled,
             self.client.draft_loaded, self.client.draft_unloaded])
        self._sync_lookup()
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self._escape,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+N"), self, self.new_chat,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+]"), self, self.toggle_side_panel,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+E"), self, lambda: self.export_button.ask("markdown"),
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        existing = ctx.store.conversations()
        if existing:
            self.open_conversation(existing[0].id)
        self._set_busy(False)
        self.update_empty()
        # Restore the last session's models unless a model was asked for meanwhile
        # (the command line's --model is chosen right after the window is built).
        QTimer.singleShot(0, self.model_bar.restore_session)

    def _centre(self) -> QWidget:
        """The middle column (:class:`ChatColumn`), its widgets named on the page."""
        col = ChatColumn(self.ctx.store, self.ctx.settings.token_colours, self._count_text, self)
        self.column = col
        self.banner, self.centre_stack, self.empty = col.banner, col.centre_stack, col.empty
        self.transcript, self.colours = col.transcript, col.colours
        self.export_button, self.panel_button = col.export_button, col.panel_button
        self.edit_banner, self.attach_bar, self.composer = col.edit_banner, col.attach_bar, col.composer
        self.send_button, self.stop_button = col.send_button, col.stop_button
        self.context_bar = col.context_bar
        self.empty.discover_requested.connect(lambda: self.ctx.page_requested.emit("discover"))
        self.empty.library_requested.connect(lambda: self.ctx.page_requested.emit("models"))
        self.empty.open_requested.connect(self.model_bar.open_target_dialog)
        self.empty.set_offers(FolderOffers(self.ctx, self.empty))  # models already on disk
        self.transcript.edit_requested.connect(self.edit_message)
        self.transcript.regenerate_requested.connect(self.regenerate)
        self.transcript.continue_requested.connect(self.continue_reply)
        self.transcript.version_requested.connect(self.show_version)
        # Paint the numbers with the tokens, so a green token is already counted.
        self.transcript.rendered.connect(lambda: self.stats_panel.refresh_if_dirty())
        self.colours.mode_changed.connect(self._colour_mode)
        self.panel_button.toggled.connect(self.set_side_panel)
        self.attach_bar.refused.connect(lambda why: self.banner.show_message(
            "The file was not attached", [why], kind="info"))
        self.attach_bar.changed.connect(lambda: self.context.show())
        self.composer.submitted.connect(self.send)
        self.composer.empty_submitted.connect(self.generate_reply)
        self.generate_button = col.generate_button
        self.generate_button.clicked.connect(self.generate_reply)
        self.send_button.clicked.connect(lambda: self.send(self.composer.toPlainText().strip()))
        self.stop_button.clicked.connect(self.stop)
        return col

    def _side(self) -> QWidget:
        self.side = SideColumn(self.ctx, self)
        self.stats_panel = self.side.stats_panel
        self.settings_panel = self.side.settings_panel
        return self.side

    # -- layout --------------------------------------------------------------
    @property
    def side_panel_open(self) -> bool:
        return self.splitter.side_open

    def set_side_panel(self, open_: bool) -> None:
        """Show or hide the right panel; remembered for the next start."""
        if open_ == self.side_panel_open and self.panel_button.isChecked() == open_:
            return
        self.splitter.set_side_open(open_)
        self.panel_button.blockSignals(True)
        self.panel_button.setChecked(open_)
        self.panel_button.blockSignals(False)
        self.panel_button.setText("Hide panel ⟩" if open_ else "⟨ Show panel")
        session = self.settings_panel.session
        if session.side_panel_open != open_:
            session.side_panel_open = open_
            try:
                session.save()
            except OSError:
                pass

    def toggle_side_panel(self) -> None:
        self.set_side_panel(not self.side_panel_open)

    def update_empty(self) -> None:
        """The welcome text while the transcript is empty, the transcript otherwise."""
        e = self.client
        self.empty.set_model_loaded(e.has_target, e.is_loading("target"), e.can_speculate)
        showing = self.transcript if self.transcript.messages else self.empty
        self.centre_stack.setCurrentWidget(showing)
        self.export_button.set_conversation(self.conversation_id)
        self._update_generate()

    def _update_generate(self) -> None:
        """"Generate reply" while the chat ends in the user's message and nothing runs."""
        roles = [m.role for m in self.transcript.messages]
        self.generate_button.setVisible(needs_reply(roles, self.client.busy))

    def _sync_lookup(self) -> None:
        self.model_bar.set_lookup_mode(self.settings_panel.lookup_mode)

    # -- conversations -------------------------------------------------------
    def new_chat(self) -> None:
        if self.client.busy:
            return
        self.conversation_id = None
        self.transcript.clear()
        self.update_empty()
        self.cancel_edit()
        self.conversations.set_current(-1)
        self._chat_opened()
        self.composer.setFocus()

    def open_conversation(self, conversation_id: int) -> None:
        if self.client.busy:
            self.conversations.set_current(self.conversation_id or -1)
            return
        self.conversation_id = conversation_id
        self.cancel_edit()
        self.transcript.clear()
        stored = self.ctx.store.messages(conversation_id)
        for m in stored:
            widget = self.transcript.add_message(m.role, m.content, position=m.position)
            self.show_stored(widget, m, last=m is stored[-1])
        self.conversations.set_current(conversation_id)
        self.update_empty()
        self._chat_opened()

    def show_stored(self, widget: MessageWidget, m: Message, last: bool) -> None:
        """Put a stored message's text, colours, footer, versions and Continue on ``widget``."""
        stats = m.meta.get("stats")
        widget.set_text(m.content)
        widget.attachments = attachments_of(m.meta)  # type: ignore[attr-defined]
        widget.set_attachments([chip_text(a, self._count_text(a.text))  # type: ignore[attr-defined]
                                for a in widget.attachments])  # type: ignore[attr-defined]
        widget.set_footer(footer_text(stats, str(m.meta.get("stop_reason", ""))) if stats else
                          f"Damaged: {m.damaged}. Shown as text only." if m.damaged else "")
        raw = m.meta.get("tokens") or []
        widget.set_tokens([(str(t[0]), str(t[1]), t[2]) for t in raw if len(t) == 3])
        if m.role == "assistant":
            widget.set_versions(*shown_version(m.meta))
            widget.set_can_continue(last and can_continue(str(m.meta.get("stop_reason", "")),
                                                          bool(m.meta.get("token_ids"))))
        widget.render()

    def stored_at(self, position: int) -> Message | None:
        if self.conversation_id is None:
            return None
        return next((m for m in self.ctx.store.messages(self.conversation_id)
                     if m.position == position), None)

    def _on_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_chat()

    # -- sending -------------------------------------------------------------
    def send(self, text: str) -> None:
        if not text or self.client.busy:
            return
        if not self.client.has_target:
            self.banner.show_message("No model loaded", [
                "Load a target model first: Open… at the top, My Models or Discover."], kind="info")
            return
        store = self.ctx.store
        if self.editing is not None and self.conversation_id is not None:
            store.truncate(self.conversation_id, self.editing.position)
            self.transcript.remove_from(self.editing)
        self.cancel_edit()
        created = self.conversation_id is None
        if self.conversation_id is None:
            self.conversation_id = store.create(title_from(text)).id
            store.update_chat_settings(
                self.conversation_id, overflow=self.context_bar.policy.currentData(),
                preset=self.side.presets.combo.currentData() or None)
        self.chat_prompt.keep(self.conversation_id)
        attached = self.attach_bar.take()
        meta = {"attachments": [a.to_meta() for a in attached]} if attached else None
        msg = store.add_message(self.conversation_id, "user", text, meta)
        widget = self.transcript.add_message("user", text, position=msg.position)
        widget.attachments = attached  # type: ignore[attr-defined]
        widget.set_attachments([chip_text(a, self._count_text(a.text)) for a in attached])
        self.context.changed()
        self.update_empty()
        self.conversations.set_current(self.conversation_id)
        self.composer.clear()
        if not self._start_reply():  # refused: the message is not kept, its text comes back
            self._take_back(widget, msg.position, text, attached, created)

    def _take_back(self, widget: MessageWidget, position: int, text: str,
                   attached: list[Any], created: bool) -> None:
        """A message whose reply was refused (the chat does not fit under "stop at the
        limit") is not left unanswered in the chat: it is removed, and its text and files go
        back to the composer to be shortened or sent elsewhere."""
        cid = self.conversation_id
        if cid is not None:
            self.ctx.store.truncate(cid, position)
            if created:
                self.ctx.store.delete(cid)
                self.conversation_id = None
        self.transcript.remove_from(widget)
        self.conversations.set_current(self.conversation_id or -1)
        self.composer.setPlainText(text)
        for a in attached:
            self.attach_bar.pending.append(a)
        self.attach_bar.recount()
        self.context.changed()
        self.update_empty()

    def generate_reply(self) -> None:
        """Reply to the user's message that ends the chat (after its reply was deleted)."""
        if not needs_reply([m.role for m in self.transcript.messages], self.client.busy):
            return
        if not self.client.has_target:
            self.banner.show_message("No model loaded", [
                "Load a target model first: Open… at the top, My Models or Discover."], kind="info")
            return
        self._start_reply()

    def _start_reply(self, earlier: list[dict[str, Any]] | None = None,
                     continuing: Message | None = None) -> bool:
        """Ask for a reply; ``earlier`` versions are kept with it; ``continuing`` goes on.
        False: refused (the conversation does not fit the context), the banner says why."""
        system = self.settings_panel.system_prompt.toPlainText().strip()
        history = self.transcript.messages
        if continuing is not None:
            self.reply_widget = history[-1]
            history = history[:-1]
        messages = chat_messages(system, history)
        if continuing is None:
            try:
                messages = self.context.messages_for_reply(
                    messages, self.settings_panel.max_tokens.value())
            except ContextFull as exc:
                self.banner.show_message("The conversation does not fit the context", [str(exc)],
                                         topic=REFUSED)
                return False
        spec = self.settings_panel.spec_config(self.model_bar.speculating)
        if continuing is None:
            self.reply_widget = self.transcript.add_message("assistant")
        else:
            self.reply_widget.set_can_continue(False)
        self._earlier, self._continuing = earlier or [], continuing
        self.stats_panel.start_reply()
        self._engine_info()
        prefix = list(continuing.meta.get("token_ids") or []) if continuing is not None else None
        reply = self.client.generate(messages, self.settings_panel.sampling(), spec, prefix)
        reply.batch_arrived.connect(self._on_batch)
        reply.finished.connect(self._on_finished)
        reply.failed.connect(self._on_failed)
        self.reply = reply
        self._update_generate()
        return True

    def _on_batch(self, batch: ReplyBatch) -> None:
        if self.reply_widget is not None:
            self.reply_widget.append_tokens(batch.tokens)
        self.stats_panel.add_batch(batch)

    def _on_finished(self, done: Done) -> None:
        widget, self.reply, self.reply_widget = self.reply_widget, None, None
        old = self._continuing
        self.banner.clear(REFUSED)  # a reply went through: the refusal no longer applies
        verdict = done.verdict
        held_back = verdict is not None and verdict.held_back
        stopped = verdict is not None and verdict.stopped
        reply = finish(done.text, done.token_ids, done.stats.to_dict(), done.stop_reason.value,
                       done.message, old, paused=verdict is not None and verdict.paused,
                       held_back=held_back, stopped=stopped)
        if widget is not None:
            widget.set_text(reply.text)
            widget.set_footer(reply.footer)
            widget.set_can_continue(reply.can_continue)
            widget.render()
            if same_as_earlier(reply.text, self._earlier, done.stats.acceptance_rule == AcceptanceRule.GREEDY):
                self.banner.show_message(SAME_TEXT_TITLE, SAME_TEXT_SENTENCES, kind="info")
            if self.conversation_id is not None:
                meta = stored_meta(reply, [list(t) for t in widget.tokens], old, self._earlier)
                if old is not None:
                    self.ctx.store.update_message(old.id, reply.text, meta)
                else:
                    msg = self.ctx.store.add_message(self.conversation_id, "assistant",
                                                     reply.text, meta)
                    widget.position = msg.position
                widget.set_versions(*shown_version(meta))
        self._earlier, self._continuing = [], None
        self.stats_panel.finish(done.stats, held_back=held_back, stopped=stopped)
        self.context.changed()
        self.model_bar.show_verdict(done.verdict)  # adaptive's judgement; None in the other modes
        self.reply_finished.emit(done)

    def _on_failed(self, message: str) -> None:
        widget, self.reply, self.reply_widget = self.reply_widget, None, None
        if widget is not None and self._continuing is None:
            self.transcript.remove_from(widget)
        elif widget is not None and self._continuing is not None:
            self.show_stored(widget, self._continuing, last=True)
        self._earlier, self._continuing = [], None
        self.update_empty()
        show_error(self, "Specula: the reply failed", message)

    def stop(self) -> None:
        if self.reply is not None:
            self.reply.stop()

    def regenerate(self, widget: MessageWidget) -> None:
        if self.client.busy or self.conversation_id is None or widget.position < 0:
            return
        old = self.stored_at(widget.position)
        earlier = versions.history(old.content, old.meta) if old is not None else []
        self.ctx.store.truncate(self.conversation_id, widget.position)
        self.transcript.remove_from(widget)
        self._start_reply(earlier=earlier)

    def continue_reply(self, widget: MessageWidget) -> None:
        """Let a reply cut at the token limit go on, in the same message."""
        if self.client.busy or widget is not self.transcript.messages[-1]:
            return
        old = self.stored_at(widget.position)
        if old is None or not old.meta.get("token_ids"):
            return
        self._start_reply(continuing=old)

    def show_version(self, widget: MessageWidget, index: int) -> None:
        """Show version ``index`` of a regenerated reply (and make it the one kept)."""
        old = self.stored_at(widget.position)
        if self.client.busy or old is None or not old.meta.get("versions"):
            return
        content, meta = versions.select(old.meta, index)
        self.ctx.store.update_message(old.id, content, meta)
        old.content, old.meta = content, meta
        self.show_stored(widget, old, last=widget is self.transcript.messages[-1])

    def edit_message(self, widget: MessageWidget) -> None:
        if self.client.busy:
            return
        self.editing = widget
        self.composer.setPlainText(widget.text)
        self.edit_banner.show()
        self.composer.setFocus()

    def cancel_edit(self) -> None:
        self.editing = None
        self.edit_banner.hide()

    def _escape(self) -> None:
        if self.reply is not None:
            self.stop()
        elif self.editing is not None:
            self.cancel_edit()
            self.composer.clear()

    # -- context, presets, load defaults --------------------------------------------
    def _chat_opened(self) -> None:
        cid = self.conversation_id
        # A new chat keeps the preset in use (and starts from its system prompt).
        preset = (self.ctx.store.chat_settings(cid).get("preset", "") if cid is not None
                  else self.side.presets.combo.currentData())
        self.side.presets.set_current(str(preset or ""))
        self.chat_prompt.opened(cid, str(preset or ""))
        self.stats_panel.clear()  # the last reply's numbers belong to the chat it was in
        self.context.opened()

    def context_changed(self) -> None:
        """Messages were edited or deleted: what was left out is worked out again."""
        if self.conversation_id is not None:
            self.ctx.store.update_chat_settings(self.conversation_id, left_out=None, start=None)
        self.context.show_left_out(0, 0)
        self.context.changed()

    def _count_text(self, text: str) -> int | None:
        return self.meter.count_text(text) if self.meter.ready else None

    def _preset_picked(self, preset: object) -> None:
        if self.conversation_id is not None:
            name = getattr(preset, "name", None)
            self.ctx.store.update_chat_settings(self.conversation_id, preset=name)

    def _set_mode(self, mode: str) -> None:
        """A model's default mode: plain turns the draft off, the others pick the mode."""
        if mode == "plain":
            self.model_bar.draft_switch.setChecked(False)
            return
        form = self.settings_panel.spec
        i = form.mode.findData(mode)
        if i >= 0:
            form.mode.setCurrentIndex(i)

    def _head_changed(self, kind: str) -> None:
        """A loaded head drafts in its own mode, so choosing it picks that mode; once it is
        gone its mode would run plain, so the mode goes back to chain (which drafts with
        a draft model or the target's MTP layers)."""
        if kind:
            self._set_mode(kind)
        elif self.settings_panel.spec.values().mode in HEAD_LABELS:
            self._set_mode("chain")

    # -- view ----------------------------------------------------------------
    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.transcript.set_actions_enabled(not busy)
        self._update_generate()

    def _colour_mode(self, mode: str) -> None:
        self.ctx.settings.token_colours = mode
        self.ctx.settings.save()
        self.transcript.set_colour_mode(mode)

    def _engine_info(self) -> None:
        self.stats_panel.set_engine(self.client.backend, self.client.n_threads)
