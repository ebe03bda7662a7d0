"""The compare page: one prompt, draft off then on, side by side, then the speedup.

Both runs use the same loaded models, seed and settings (the chat page's
defaults); they are queued one after the other on the engine worker.
"""

from __future__ import annotations

import random

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.engine.events import Done
from specula.core.engine.stats import GenerationStats
from specula.gui.chat.message import AutoHeightBrowser
from specula.gui.chat.render import plain_html
from specula.gui.context import AppContext
from specula.gui.engine_worker import Reply, ReplyBatch
from specula.gui.errors import show_error
from specula.gui.stats.footer import footer_text


def first_difference(a: str, b: str) -> int:
    """Index of the first differing character, or -1 when identical."""
    if a == b:
        return -1
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def verdict(plain: Done, spec: Done, greedy: bool) -> str:
    """The banner: speedup, both rates and whether the texts are identical."""
    p, s = plain.stats.tokens_per_s, spec.stats.tokens_per_s
    speedup = s / p if p > 0 else 0.0
    text = f"Speedup {speedup:.2f}×   ({s:.1f} vs {p:.1f} tok/s)"
    diff = first_difference(plain.text, spec.text)
    if diff < 0:
        text += "   ·   texts identical ✓"
    else:
        text += f"   ·   texts differ from character {diff}"
        text += " ✗ (greedy should match: please report)" if greedy else " (sampling: expected)"
    return text


class Column(QFrame):
    """One run: a title, the streaming text and its footer."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(title)
        self.title.setObjectName("PanelTitle")
        lay.addWidget(self.title)
        self.body = AutoHeightBrowser(self)
        self.body.setObjectName("CompareBody")
        lay.addWidget(self.body)
        self.rate = QLabel("–")
        self.rate.setObjectName("StatsBig")
        lay.addWidget(self.rate)
        self.footer = QLabel("")
        self.footer.setObjectName("Footer")
        self.footer.setWordWrap(True)
        lay.addWidget(self.footer)
        lay.addStretch(1)
        self.text = ""

    def reset(self) -> None:
        self.text = ""
        self.body.setHtml(plain_html("…"))
        self.rate.setText("–")
        self.footer.setText("waiting…")

    def add(self, batch: ReplyBatch) -> None:
        self.text += "".join(t.text for t in batch.tokens)
        self.body.setHtml(plain_html(self.text))
        if batch.stats is not None:
            self.show_rate(batch.stats)
        self.footer.setText("generating…")

    def show_rate(self, stats: GenerationStats) -> None:
        self.rate.setText(f"{stats.tokens_per_s:.1f} tok/s")

    def finish(self, done: Done) -> None:
        self.text = done.text
        self.body.setHtml(plain_html(done.text))
        self.show_rate(done.stats)
        self.footer.setText(footer_text(done.stats.to_dict(), done.stop_reason.value))


class ComparePage(QWidget):
    compared = Signal(str)
    """Both runs finished; the banner text (speedup and identity)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.engine = ctx.engine
        self.results: dict[str, Done] = {}
        self.replies: list[Reply] = []
        self._greedy = True
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 16, 24, 16)
        title = QLabel("Compare: the same prompt with the draft off and on")
        title.setObjectName("PanelTitle")
        lay.addWidget(title)
        self.models = QLabel("")
        self.models.setObjectName("Muted")
        lay.addWidget(self.models)
        row = QHBoxLayout()
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("A prompt to run twice, e.g. \"Write a Python function "
                                       "that reverses a string.\"")
        self.prompt.setFixedHeight(70)
        row.addWidget(self.prompt, 1)
        buttons = QVBoxLayout()
        self.run_button = QPushButton("Run both")
        self.run_button.setObjectName("Primary")
        self.run_button.clicked.connect(self.run)
        buttons.addWidget(self.run_button)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("Danger")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        buttons.addWidget(self.stop_button)
        row.addLayout(buttons)
        lay.addLayout(row)
        self.banner = QLabel("Load a target and a draft on the Chat page, then run a prompt.")
        self.banner.setObjectName("ResultBanner")
        self.banner.setWordWrap(True)
        lay.addWidget(self.banner)
        grid = QGridLayout()
        grid.setHorizontalSpacing(24)
        self.plain = Column("Draft off (plain decoding)")
        self.spec = Column("Draft on (speculative)")
        grid.addWidget(self.plain, 0, 0)
        grid.addWidget(self.spec, 0, 1)
        lay.addLayout(grid, 1)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.stop,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        for sig in (self.engine.target_loaded, self.engine.draft_unloaded):
            sig.connect(self._update_models)
        self.engine.draft_loaded.connect(self._update_models)
        self.engine.busy_changed.connect(lambda busy: self.run_button.setEnabled(not busy))
        self._update_models()

    def _update_models(self, *_args: object) -> None:
        e = self.engine
        t = e.target_info.display_name if e.target_info else "none"
        d = e.draft_info.display_name if e.draft_info else "none (load one on the Chat page)"
        self.models.setText(f"Target: {t}    Draft: {d}")

    def run(self) -> None:
        prompt = self.prompt.toPlainText().strip()
        if not prompt or self.engine.busy:
            return
        if not self.engine.has_target:
            show_error(self, "No model loaded", "Load a target model on the Chat page first.")
            return
        s = self.ctx.settings
        gen = s.generation
        sampling = gen.to_sampling()
        if sampling.seed is None:
            sampling.seed = random.randrange(2**31)
        self._greedy = sampling.greedy
        messages = [{"role": "system", "content": gen.system_prompt}] if gen.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        spec_mode = s.speculative.to_spec(enabled=True)
        self.results.clear()
        self.spec.title.setText(f"Draft on ({spec_mode.mode.value})")
        self.banner.setText(f"Running draft off, then draft on (seed {sampling.seed})…")
        self.plain.reset()
        self.spec.reset()
        self.replies = []
        for key, spec, col in (("plain", s.speculative.to_spec(enabled=False), self.plain),
                               ("spec", spec_mode, self.spec)):
            reply = self.engine.generate(messages, sampling, spec)
            reply.batch_arrived.connect(col.add)
            reply.finished.connect(lambda done, k=key, c=col: self._finished(k, c, done))
            reply.failed.connect(self._failed)
            self.replies.append(reply)
        self.stop_button.setEnabled(True)

    def _finished(self, key: str, col: Column, done: Done) -> None:
        col.finish(done)
        self.results[key] = done
        if len(self.results) == 2:
            self.stop_button.setEnabled(False)
            text = verdict(self.results["plain"], self.results["spec"], self._greedy)
            if self.results["spec"].stats.mode == "plain":
                text += "   (no draft model was loaded: both runs were plain)"
            if "cancelled" in (d.stop_reason.value for d in self.results.values()):
                text += "   (stopped early: compare complete runs)"
            self.banner.setText(text)
            self.compared.emit(text)

    def _failed(self, message: str) -> None:
        self.stop()
        self.stop_button.setEnabled(False)
        self.banner.setText(f"Failed: {message}")
        show_error(self, "Specula: compare failed", message)

    def stop(self) -> None:
        for r in self.replies:
            r.stop()
