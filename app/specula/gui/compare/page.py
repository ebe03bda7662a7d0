"""The compare page: one prompt with the draft off and on, interleaved, then the speedup.

Runs alternate in ABBA rounds (:func:`specula.core.compare.schedule`) so the
machine's drift weighs both sides alike; every run of a comparison shares
one seed. The page runs one reply at a time on the engine worker, shows
which run it is on, and Stop (or Esc) ends the comparison after the current
run's partial reply. The arithmetic lives in :mod:`specula.core.compare`.
"""

from __future__ import annotations

import random
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.compare import (
    Comparison,
    RunFigures,
    Side,
    identity_sentence,
    schedule,
    significant,
)
from specula.core.engine.events import Done
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.library.labels import label_for
from specula.core.pairing.heads import head_label
from specula.gui.compare.column import Column
from specula.gui.compare.options import CompareOptions
from specula.gui.context import AppContext
from specula.gui.elided import ElidedLabel
from specula.gui.engine_worker import ReplyHandle
from specula.gui.errors import show_error
from specula.gui.page_header import page_layout

EXACT_RULES = ("greedy", "coupled")  # rules under which a seed fixes the text in every mode
IDENTITY_NOTE = ("With greedy decoding, or a fixed seed under the seeded (coupled) sampling "
                 "rule, both sides must give the same text at any temperature: the reply "
                 "depends only on the seed and the target, whatever the draft proposes.")


def exact_expected(done: Done) -> bool:
    """True when the reply's text is fixed by its seed alone (no lossy relaxed acceptance)."""
    stats = done.stats
    return stats.acceptance_rule in EXACT_RULES and not stats.relaxed_accepted


class ComparePage(QWidget):
    compared = Signal(str)
    """A comparison ended (all runs, or stopped); the banner text (speedup and identity)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.client = ctx.engine
        self.comparison = Comparison()
        self.results: dict[str, Done] = {}  # the last Done of each side ("plain", "spec")
        self.reply: ReplyHandle | None = None
        self._order: list[Side] = []
        self._index = 0
        self._stopped = False
        self._running = False  # from Run until the last run ends (a reply is None between runs)
        self._exact = True
        self._messages: list[dict[str, str]] = []
        self._sampling = SamplingParams()
        lay, _head = page_layout(self, "Compare: the same prompt with the draft off and on",
                                 title_role="PanelTitle")
        self.models = ElidedLabel("", self)  # long names never widen the window
        self.models.setObjectName("Muted")
        lay.addWidget(self.models)
        row = QHBoxLayout()
        self.prompt = QPlainTextEdit()
        self.prompt.setPlaceholderText("A prompt to run with the draft off and on, e.g. "
                                       "\"Write a Python function that reverses a string.\"")
        self.prompt.setFixedHeight(64)
        row.addWidget(self.prompt, 1)
        buttons = QVBoxLayout()
        self.run_button = QPushButton("Run both")
        self.run_button.setObjectName("Primary")
        self.run_button.clicked.connect(self.run)
        buttons.addWidget(self.run_button)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("Danger")
        self.stop_button.setToolTip("Stop the comparison after the current run (Esc)")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        buttons.addWidget(self.stop_button)
        row.addLayout(buttons)
        lay.addLayout(row)
        self.options = CompareOptions(ctx, self)
        lay.addWidget(self.options)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setVisible(False)
        lay.addWidget(self.progress)
        self.banner = QLabel("")
        self.banner.setObjectName("ResultBanner")
        self.banner.setWordWrap(True)
        lay.addWidget(self.banner)
        self.note = QLabel(IDENTITY_NOTE)
        self.note.setObjectName("Muted")
        self.note.setWordWrap(True)
        lay.addWidget(self.note)
        sides = QHBoxLayout()
        sides.setSpacing(20)
        self.plain = Column("Draft off (plain decoding)")
        self.spec = Column("Draft on (speculative)")
        sides.addWidget(self.plain, 1)
        sides.addWidget(self.spec, 1)
        lay.addLayout(sides, 1)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.stop,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        for sig in (self.client.target_loaded, self.client.draft_unloaded,
                    self.client.load_failed, self.client.load_cancelled, self.client.load_started):
            sig.connect(self._update_models)
        self.client.draft_loaded.connect(self._update_models)
        for sig in (self.client.head_loaded, self.client.head_unloaded):
            sig.connect(self._update_models)
        self.client.busy_changed.connect(self._update_models)
        ctx.settings_changed.connect(self._settings_changed)
        self._update_models()

    # -- what is loaded ---------------------------------------------------------------
    def readiness(self) -> str:
        """"" when a comparison can run, else what to do first."""
        e = self.client
        if e.is_loading("target") or e.is_loading("draft"):
            return "Loading a model… the comparison can run once it is ready."
        if not e.has_target:
            return "Load a target and a draft on the Chat page, then run a prompt here."
        if not e.can_speculate:
            return "Load a draft on the Chat page: without one both runs would be plain."
        return ""

    def _update_models(self, *_args: object) -> None:
        e = self.client
        t = label_for(e.target_info.source, e.target_info).text if e.target_info else "none"
        d = label_for(e.draft_info.source, e.draft_info).text if e.draft_info else \
            f"{head_label(e.head_info.kind)} ({Path(e.head_info.source).name})" if e.head_info else \
            "built-in MTP" if e.has_builtin_draft else "none"
        drafter = e.draft_info or e.head_info
        self.models.setText(f"Target: {t}    Draft: {d}")
        self.models.setToolTip(f"Target: {t}    Draft: {d}\n\n"
                               f"Target: {e.target_info.source if e.target_info else '-'}\n"
                               f"Draft: {drafter.source if drafter is not None else '-'}")
        running = self._running or self.reply is not None
        why = self.readiness()
        self.run_button.setEnabled(not why and not running and not e.busy)
        self.run_button.setToolTip(why or "Run the prompt with the draft off and on, interleaved")
        if not running and (why or not self.comparison.complete_rounds):
            self.banner.setText(why or "Ready: both models are loaded. Type a prompt and run it.")

    def _settings_changed(self) -> None:
        self.options.refresh()
        for col in (self.plain, self.spec):
            col.colour_mode = self.ctx.settings.token_colours
            col.render()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._running:
            self.options.refresh()  # follow what the chat panel holds now
            self._update_models()  # and what is loaded (e.g. after an eject)

    # -- running ----------------------------------------------------------------------
    def run(self) -> None:
        prompt = self.prompt.toPlainText().strip()
        if not prompt or self.reply is not None or self.client.busy:
            return
        why = self.readiness()
        if why:
            show_error(self, "Specula: cannot compare yet", why)
            return
        self.options.refresh()
        gen = self.options.generation()
        sampling = gen.to_sampling()
        if sampling.seed is None:
            sampling.seed = random.randrange(2**31)  # one seed for every run
        self._sampling = sampling
        self._messages = [{"role": "system", "content": gen.system_prompt}] \
            if gen.system_prompt else []
        self._messages.append({"role": "user", "content": prompt})
        self.comparison = Comparison()
        self.results.clear()
        self._order = schedule(self.options.rounds.value())
        self._index = 0
        self._stopped = False
        self._exact = True
        mode = self.options.speculative().mode
        self.spec.title.setText(f"Draft on ({mode})")
        for col in (self.plain, self.spec):
            col.colour_mode = self.ctx.settings.token_colours
            col.rate.setText("–")
            col.reset()
        self.progress.setRange(0, len(self._order))
        self.progress.setVisible(True)
        self.stop_button.setEnabled(True)
        self.run_button.setEnabled(False)
        self._running = True
        self._next()

    def _column(self, side: Side) -> Column:
        return self.plain if side is Side.PLAIN else self.spec

    def _next(self) -> None:
        side = self._order[self._index]
        n = len(self._order)
        label = "draft off" if side is Side.PLAIN else "draft on"
        self.progress.setValue(self._index)
        self.progress.setFormat(f"Run {self._index + 1} of {n}: {label}")
        self.banner.setText(f"Running {n} runs, alternating (seed {self._sampling.seed})…")
        col = self._column(side)
        col.reset("generating…")
        spec = self.options.speculative().to_spec(enabled=side is Side.SPEC)
        reply = self.client.generate(self._messages, self._sampling, spec)
        reply.batch_arrived.connect(col.add)
        reply.finished.connect(lambda done, s=side: self._finished(s, done))
        reply.failed.connect(self._failed)
        self.reply = reply

    def _finished(self, side: Side, done: Done) -> None:
        self.reply = None
        cancelled = done.stop_reason.value == "cancelled"
        if not cancelled:
            self.comparison.add(side, RunFigures(done.stats.tokens, done.stats.decode_s,
                                                 done.text, done.stats.drafted, done.stats.accepted))
            self._exact = self._exact and exact_expected(done)
        self.results[side.value] = done
        rate = self.comparison.rate(side)
        runs = len(self.comparison.runs[side])
        pooled = f"{significant(rate, 3)} tok/s" + (f" over {runs} runs" if runs > 1 else "")
        self._column(side).finish(done, pooled)
        self._index += 1
        if self._stopped or cancelled or self._index >= len(self._order):
            self._end()
        else:
            self._next()

    def _end(self) -> None:
        self._running = False
        self.progress.setValue(self._index)
        self.progress.setVisible(False)
        self.stop_button.setEnabled(False)
        c = self.comparison
        if c.complete_rounds:
            text = f"{c.summary()}   ·   {identity_sentence(c.difference(), self._exact)}"
            if not self._sampling.greedy:
                text += f"   ·   seed {self._sampling.seed}"
            if self.results.get("spec") and self.results["spec"].stats.mode == "plain":
                text += "   (no draft model was loaded: both runs were plain)"
        else:
            text = "Stopped before a round was complete: nothing to compare."
        if self._index < len(self._order):
            text += f"   (stopped after {self._index} of {len(self._order)} runs)"
        self.banner.setText(text)
        self._update_models()
        self.compared.emit(text)

    def _failed(self, message: str) -> None:
        self.reply = None
        self._running = False
        self._stopped = True
        self.progress.setVisible(False)
        self.stop_button.setEnabled(False)
        self.banner.setText(f"Failed: {message}")
        self._update_models()
        show_error(self, "Specula: compare failed", message)

    def stop(self) -> None:
        """End the comparison: the current run stops, no further run starts."""
        self._stopped = True
        if self.reply is not None:
            self.reply.stop()
