"""The chat's view of its context: prompt tokens counted live, and the overflow policy.

:class:`ContextMeter` keeps a :class:`~specula.core.prompt_counter.PromptCounter`
for the loaded target, built off the GUI thread when the target loads. The
composer's counter reads "1,234 + 56 / 4,096 tokens" (the conversation as it
would be sent, the text being typed, the context) and is recounted 250 ms
after the typing stops; the conversation's own count is recounted only when
its messages change. A count takes about a millisecond per few thousand
tokens, so the GUI thread can afford it at that pace.

:class:`ContextBar` is the row under the composer: the counter, the chat's
overflow policy and the "N earlier messages left out" note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from specula.core.chat.overflow import (
    DEFAULT_POLICY,
    POLICY_LABELS,
    ChatMessage,
    OverflowPolicy,
    left_out_text,
    prompt_budget,
)
from specula.core.gguf.model_info import ModelInfo
from specula.core.prompt_counter import PromptCounter
from specula.gui.elided import ElidedLabel
from specula.gui.engine_client import EngineClient
from specula.gui.tasks import Task, TaskContext, TaskError, start_task

DEBOUNCE_MS = 250


class ContextMeter(QObject):
    ready_changed = Signal(bool)
    """The counter for the loaded target is ready (True) or gone (False)."""

    def __init__(self, client: EngineClient, n_ctx: Callable[[], int],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self._n_ctx = n_ctx
        self.counter: PromptCounter | None = None
        self.info: ModelInfo | None = None
        self._task: Task | None = None
        client.target_loaded.connect(self._on_target)
        client.target_unloaded.connect(self._drop)

    @property
    def ready(self) -> bool:
        return self.counter is not None

    @property
    def n_ctx(self) -> int:
        """The loaded context's length: the load option, capped by the model's training length."""
        n = self._n_ctx()
        trained = self.info.context_length if self.info is not None else None
        return min(n, trained) if trained else n

    def budget(self, max_tokens: int) -> int:
        return prompt_budget(self.n_ctx, max_tokens)

    def count(self, messages: Sequence[ChatMessage]) -> int:
        assert self.counter is not None
        return self.counter.count(messages)

    def count_text(self, text: str) -> int:
        return self.counter.count_text(text) if self.counter is not None else 0

    def _on_target(self, info: ModelInfo) -> None:
        self._drop()
        self.info = info
        if self._task is not None:
            self._task.cancel()
        path = info.source

        def build(_ctx: TaskContext) -> PromptCounter:
            return PromptCounter(path)

        self._task = start_task(self, build, on_done=self._built, on_failed=self._failed)

    def _built(self, counter: object) -> None:
        assert isinstance(counter, PromptCounter)
        if self.info is None or counter.source != self.info.source:
            counter.close()
            return
        self.counter = counter
        self.ready_changed.emit(True)

    def _failed(self, _error: TaskError) -> None:
        self.ready_changed.emit(False)  # no counter: replies are sent whole, as before

    def _drop(self) -> None:
        if self.counter is not None:
            self.counter.close()
            self.counter = None
            self.ready_changed.emit(False)


class ContextBar(QWidget):
    """The counter, the overflow policy and what was left out, under the composer."""

    policy_changed = Signal(object)
    """The user picked another overflow policy for this chat (an OverflowPolicy)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 2, 0, 0)
        # Both elide (the whole text in the tooltip): the largest counts and a long note
        # never make the chat column, and so the window, wider.
        self.tokens = ElidedLabel("", self, Qt.TextElideMode.ElideRight,
                                  tip="Prompt tokens of this conversation as it would be sent, "
                                      "+ the message being typed, / the context length")
        self.tokens.setObjectName("Muted")
        lay.addWidget(self.tokens, 2)
        self.left_out = ElidedLabel("", self, Qt.TextElideMode.ElideRight)
        self.left_out.setObjectName("LeftOutNote")
        self.left_out.hide()
        lay.addWidget(self.left_out, 3)
        lay.addWidget(QLabel("When full:"))
        self.policy = QComboBox(self)
        for p in OverflowPolicy:
            self.policy.addItem(POLICY_LABELS[p], p.value)
        self.policy.setToolTip(
            "What this chat sends when it no longer fits the context:\n"
            "Stop at the limit: refuse, nothing is left out;\n"
            "Truncate middle: keep the system prompt, the first exchange and the latest turns;\n"
            "Rolling window: keep the system prompt and the latest turns.")
        self.set_policy(DEFAULT_POLICY)
        self.policy.currentIndexChanged.connect(
            lambda _i: self.policy_changed.emit(OverflowPolicy(self.policy.currentData())))
        lay.addWidget(self.policy)

    def set_policy(self, policy: OverflowPolicy) -> None:
        self.policy.blockSignals(True)
        self.policy.setCurrentIndex(max(0, self.policy.findData(policy.value)))
        self.policy.blockSignals(False)

    def show_count(self, conversation: int | None, typed: int, n_ctx: int) -> None:
        if conversation is None:
            self.tokens.setText("")
            return
        over = conversation + typed > n_ctx
        text = f"{conversation:,}" + (f" + {typed:,}" if typed else "") + f" / {n_ctx:,} tokens"
        self.tokens.setText(text + ("  (over the context)" if over else ""))
        self.tokens.setProperty("over", over)

    def show_left_out(self, n: int) -> None:
        self.left_out.setText(f"· {left_out_text(n)}" if n else "")
        self.left_out.setVisible(bool(n))


def debounce(parent: QObject, slot: Callable[[], None], ms: int = DEBOUNCE_MS) -> QTimer:
    """A single-shot timer: ``start()`` it on every change, ``slot`` runs once things are quiet."""
    t = QTimer(parent)
    t.setSingleShot(True)
    t.setInterval(ms)
    t.timeout.connect(slot)
    return t
