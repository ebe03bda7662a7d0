"""The chat page: conversations, model pickers, transcript, composer, settings and live stats."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from specula.core.chat.conversations import title_from
from specula.core.engine.events import Done
from specula.gui.chat.composer import Composer
from specula.gui.chat.conversation_list import ConversationList
from specula.gui.chat.legend import ColourSwitch
from specula.gui.chat.message import MessageWidget
from specula.gui.chat.model_bar import ModelBar
from specula.gui.chat.render import TokenTuple
from specula.gui.chat.settings_panel import SettingsPanel
from specula.gui.chat.transcript import Transcript
from specula.gui.context import AppContext
from specula.gui.engine_worker import Reply, ReplyBatch
from specula.gui.errors import show_error
from specula.gui.stats.footer import footer_text
from specula.gui.stats.panel import StatsPanel


class ChatPage(QWidget):
    reply_finished = Signal(object)
    """A reply ended and was saved (its Done)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.engine = ctx.engine
        self.conversation_id: int | None = None
        self.reply: Reply | None = None
        self.reply_widget: MessageWidget | None = None
        self.editing: MessageWidget | None = None

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        self.model_bar = ModelBar(ctx, self)
        outer.addWidget(self.model_bar)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        outer.addWidget(split, 1)

        self.conversations = ConversationList(ctx.store, self)
        self.conversations.setMinimumWidth(180)
        split.addWidget(self.conversations)
        split.addWidget(self._centre())
        split.addWidget(self._side())
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setStretchFactor(2, 0)
        split.setSizes([220, 700, 330])
        self.splitter = split

        self.conversations.selected.connect(self.open_conversation)
        self.conversations.new_requested.connect(self.new_chat)
        self.conversations.deleted.connect(self._on_deleted)
        self.engine.busy_changed.connect(self._set_busy)
        self.engine.target_loaded.connect(lambda _i: self._engine_info())
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self._escape,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Ctrl+N"), self, self.new_chat,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        existing = ctx.store.conversations()
        if existing:
            self.open_conversation(existing[0].id)
        self._set_busy(False)

    def _centre(self) -> QWidget:
        w = QWidget(self)
        lay = QVBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 8)
        self.transcript = Transcript(w)
        self.transcript.edit_requested.connect(self.edit_message)
        self.transcript.regenerate_requested.connect(self.regenerate)
        # Paint the numbers with the tokens, so a green token is already counted.
        self.transcript.rendered.connect(lambda: self.stats_panel.refresh_if_dirty())
        lay.addWidget(self.transcript, 1)
        bottom = QVBoxLayout()
        bottom.setContentsMargins(16, 0, 16, 0)
        self.colours = ColourSwitch(self.ctx.settings.token_colours, w)
        self.colours.mode_changed.connect(self._colour_mode)
        self.transcript.set_colour_mode(self.colours.mode)
        bottom.addWidget(self.colours)
        self.edit_banner = QLabel("Editing a message: sending replaces it and everything after "
                                  "it (Esc cancels).", w)
        self.edit_banner.setObjectName("EditBanner")
        self.edit_banner.hide()
        bottom.addWidget(self.edit_banner)
        row = QHBoxLayout()
        self.composer = Composer(w)
        self.composer.submitted.connect(self.send)
        row.addWidget(self.composer, 1)
        buttons = QVBoxLayout()
        self.send_button = QPushButton("Send", w)
        self.send_button.setObjectName("Primary")
        self.send_button.clicked.connect(lambda: self.send(self.composer.toPlainText().strip()))
        buttons.addWidget(self.send_button)
        self.stop_button = QPushButton("Stop", w)
        self.stop_button.setObjectName("Danger")
        self.stop_button.setToolTip("Stop the reply (Esc); the text so far is kept")
        self.stop_button.clicked.connect(self.stop)
        buttons.addWidget(self.stop_button)
        row.addLayout(buttons)
        bottom.addLayout(row)
        lay.addLayout(bottom)
        return w

    def _side(self) -> QWidget:
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(300)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QFrame()
        inner.setObjectName("SidePanel")
        lay = QVBoxLayout(inner)
        lay.setContentsMargins(12, 10, 12, 10)
        self.stats_panel = StatsPanel(inner)
        lay.addWidget(self.stats_panel)
        self.settings_panel = SettingsPanel(self.ctx, inner)
        lay.addWidget(self.settings_panel)
        lay.addStretch(1)
        scroll.setWidget(inner)
        bar = scroll.verticalScrollBar().sizeHint().width()
        scroll.setMinimumWidth(inner.minimumSizeHint().width() + bar + 2)
        return scroll

    # -- conversations -------------------------------------------------------
    def new_chat(self) -> None:
        if self.engine.busy:
            return
        self.conversation_id = None
        self.transcript.clear()
        self._cancel_edit()
        self.conversations.set_current(-1)
        self.composer.setFocus()

    def open_conversation(self, conversation_id: int) -> None:
        if self.engine.busy:
            self.conversations.set_current(self.conversation_id or -1)
            return
        self.conversation_id = conversation_id
        self._cancel_edit()
        self.transcript.clear()
        for m in self.ctx.store.messages(conversation_id):
            stats = m.meta.get("stats")
            footer = footer_text(stats, str(m.meta.get("stop_reason", ""))) if stats else ""
            raw = m.meta.get("tokens") or []
            tokens: list[TokenTuple] = [(str(t[0]), str(t[1]), t[2]) for t in raw if len(t) == 3]
            self.transcript.add_message(m.role, m.content, tokens, footer, m.position)
        self.conversations.set_current(conversation_id)

    def _on_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.new_chat()

    # -- sending -------------------------------------------------------------
    def send(self, text: str) -> None:
        if not text or self.engine.busy:
            return
        if not self.engine.has_target:
            show_error(self, "No model loaded", "Load a target model first (Open… at the top).")
            return
        store = self.ctx.store
        if self.editing is not None and self.conversation_id is not None:
            store.truncate(self.conversation_id, self.editing.position)
            self.transcript.remove_from(self.editing)
        self._cancel_edit()
        if self.conversation_id is None:
            self.conversation_id = store.create(title_from(text)).id
        msg = store.add_message(self.conversation_id, "user", text)
        self.transcript.add_message("user", text, position=msg.position)
        self.conversations.set_current(self.conversation_id)
        self.composer.clear()
        self._start_reply()

    def _start_reply(self) -> None:
        system = self.settings_panel.system_prompt.toPlainText().strip()
        messages = [{"role": "system", "content": system}] if system else []
        messages += [{"role": m.role, "content": m.text} for m in self.transcript.messages]
        spec = self.settings_panel.spec_config(self.model_bar.draft_switch.isChecked())
        self.reply_widget = self.transcript.add_message("assistant")
        self.stats_panel.start_reply()
        self._engine_info()
        reply = self.engine.generate(messages, self.settings_panel.sampling(), spec)
        reply.batch_arrived.connect(self._on_batch)
        reply.finished.connect(self._on_finished)
        reply.failed.connect(self._on_failed)
        self.reply = reply

    def _on_batch(self, batch: ReplyBatch) -> None:
        if self.reply_widget is not None:
            self.reply_widget.append_tokens(batch.tokens)
        self.stats_panel.add_batch(batch)

    def _on_finished(self, done: Done) -> None:
        widget, self.reply, self.reply_widget = self.reply_widget, None, None
        stats = done.stats.to_dict()
        stats.update(drafting_steps=self.stats_panel.live.drafting_steps,
                     plain_run=self.stats_panel.live.plain_run)
        footer = footer_text(stats, done.stop_reason.value)
        if done.message:
            footer += f"\n{done.message}"
        if widget is not None:
            widget.set_text(done.text)
            widget.set_footer(footer)
            widget.render()
            if self.conversation_id is not None:
                meta = {"stats": stats, "stop_reason": done.stop_reason.value,
                        "tokens": [list(t) for t in widget.tokens]}
                msg = self.ctx.store.add_message(self.conversation_id, "assistant", done.text, meta)
                widget.position = msg.position
        self.stats_panel.finish(done.stats)
        self.reply_finished.emit(done)

    def _on_failed(self, message: str) -> None:
        widget, self.reply, self.reply_widget = self.reply_widget, None, None
        if widget is not None:
            self.transcript.remove_from(widget)
        show_error(self, "Specula: the reply failed", message)

    def stop(self) -> None:
        if self.reply is not None:
            self.reply.stop()

    def regenerate(self, widget: MessageWidget) -> None:
        if self.engine.busy or self.conversation_id is None or widget.position < 0:
            return
        self.ctx.store.truncate(self.conversation_id, widget.position)
        self.transcript.remove_from(widget)
        self._start_reply()

    def edit_message(self, widget: MessageWidget) -> None:
        if self.engine.busy:
            return
        self.editing = widget
        self.composer.setPlainText(widget.text)
        self.edit_banner.show()
        self.composer.setFocus()

    def _cancel_edit(self) -> None:
        self.editing = None
        self.edit_banner.hide()

    def _escape(self) -> None:
        if self.reply is not None:
            self.stop()
        elif self.editing is not None:
            self._cancel_edit()
            self.composer.clear()

    # -- view ----------------------------------------------------------------
    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.transcript.set_actions_enabled(not busy)

    def _colour_mode(self, mode: str) -> None:
        self.ctx.settings.token_colours = mode
        self.ctx.settings.save()
        self.transcript.set_colour_mode(mode)

    def _engine_info(self) -> None:
        self.stats_panel.set_engine(self.engine.backend, self.engine.n_threads)
