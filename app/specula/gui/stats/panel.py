"""Live statistics for the reply being generated, refreshed at most 5 times a second.

Batches from the engine worker only store the latest numbers; a timer paints
them, so the view never updates once per token. Every figure comes from
:mod:`specula.gui.stats.live_stats`: no rate before the reply has run long
enough, acceptance only over tokens actually drafted, and at the end the same
figures as the footer under the reply.
"""

from __future__ import annotations

from typing import ClassVar

import psutil
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QVBoxLayout, QWidget

from specula.core.engine.stats import GenerationStats
from specula.core.engine.verdict import PolicyVerdict
from specula.core.pairing.heads import mode_label
from specula.core.sizes import byte_size
from specula.gui.engine_worker import ReplyBatch
from specula.gui.stats import live_stats as ls
from specula.gui.stats.chart import RateChart

REFRESH_MS = 200
NUMBER_KEYS = ("tokens", "drafted", "accepted", "acceptance", "per_step", "ttft", "mode")


class StatsPanel(QFrame):
    ROWS: ClassVar[list[tuple[str, str]]] = [
        ("tokens", "Tokens"), ("drafted", "Drafted"), ("accepted", "Accepted"),
        ("acceptance", "Acceptance"), ("per_step", "Accepted / drafting step"),
        ("ttft", "Time to first token"), ("mode", "Mode"), ("memory", "Memory (RSS)"),
        ("backend", "Backend"), ("threads", "Threads"),
    ]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("StatsPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        title = QLabel("Live statistics")
        title.setObjectName("PanelTitle")
        lay.addWidget(title)
        self.big = QLabel(ls.DASH)
        self.big.setObjectName("StatsBig")
        lay.addWidget(self.big)
        self.sub = QLabel("tokens per second")
        self.sub.setObjectName("Muted")
        self.sub.setWordWrap(True)
        lay.addWidget(self.sub)
        self.note = QLabel("")
        self.note.setObjectName("StatsNote")
        self.note.setWordWrap(True)
        self.note.hide()
        lay.addWidget(self.note)
        self.chart = RateChart(self)
        lay.addWidget(self.chart)
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(3)
        self.values: dict[str, QLabel] = {}
        for row, (key, label) in enumerate(self.ROWS):
            name = QLabel(label)
            name.setObjectName("Muted")
            value = QLabel(ls.DASH)
            value.setObjectName("StatValue")
            grid.addWidget(name, row, 0)
            grid.addWidget(value, row, 1)
            self.values[key] = value
        lay.addLayout(grid)
        self.live = ls.LiveStats()
        self.stats: GenerationStats | None = None
        self.figures: ls.LiveFigures | None = None
        self.paused = False  # the adaptive verdict the chat header shows says "paused"
        self.held_back = False  # the verdict at the reply's end: the draft was held back for it
        self.stopped = False  # the verdict at the reply's end: the stop-loss ended its drafting
        self.backend = ""
        self.n_threads = 0
        self._dirty = False
        self.refreshes = 0  # how many times the numbers were repainted (tests read it)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh_if_dirty)
        self._timer.start()
        self.refresh()

    def set_engine(self, backend: str, n_threads: int) -> None:
        self.backend, self.n_threads = backend, n_threads
        self._dirty = True

    def set_pause(self, verdict: PolicyVerdict | None) -> None:
        """The header's verdict (None: it states no pause); the note says the same."""
        self.paused = verdict is not None and verdict.paused
        self.refresh()

    def clear(self) -> None:
        """No reply to speak of (a new chat, another chat opened): the numbers go blank."""
        self.start_reply()
        self.refresh()

    def start_reply(self) -> None:
        self.live.clear()
        self.stats = None
        self.held_back = self.stopped = False
        self._dirty = True

    def add_batch(self, batch: ReplyBatch) -> None:
        for step in batch.steps:
            self.live.add(step)
        if batch.stats is not None:
            self.stats = batch.stats
        self._dirty = True

    def finish(self, stats: GenerationStats, held_back: bool = False, stopped: bool = False) -> None:
        """The reply's final totals; ``held_back``: the adaptive verdict at its end said the
        draft was not fed for this short answer; ``stopped``: its stop-loss ended the reply's
        drafting (the note says so, as the footer does)."""
        self.stats = stats
        self.held_back, self.stopped = held_back, stopped
        self.refresh()

    def refresh_if_dirty(self) -> None:
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        self._dirty = False
        self.refreshes += 1
        v = self.values
        v["memory"].setText(byte_size(psutil.Process().memory_info().rss))
        v["backend"].setText(self.backend or ls.DASH)
        v["threads"].setText(str(self.n_threads) if self.n_threads else ls.DASH)
        self.chart.set_points(self.live.chart)
        f = self.live.figures(self.stats)
        if f is not None:
            f = ls.with_stopped(ls.with_held_back(ls.with_pause(f, self.paused), self.held_back),
                                self.stopped)
        self.figures = f
        if f is None:
            self.big.setText(ls.DASH)
            self.sub.setText("tokens per second")
            self.note.hide()
            for key in NUMBER_KEYS:
                v[key].setText(ls.DASH)
            return
        self.big.setText(ls.format_rate(f))
        self.sub.setText("tokens per second" if f.rate is not None else
                         f"tokens per second (shown after {ls.MIN_RATE_TOKENS} tokens "
                         f"and {ls.MIN_RATE_S:g} s)")
        v["tokens"].setText(str(f.tokens))
        v["drafted"].setText(str(f.drafted))
        v["accepted"].setText(str(f.accepted))
        v["acceptance"].setText(ls.format_acceptance(f))
        v["per_step"].setText(ls.format_per_step(f))
        v["ttft"].setText(ls.format_ttft(f))
        v["mode"].setText(mode_label(f.mode))  # a head's mode by the head: "EAGLE-3 head"
        note = ls.drafting_note(f)
        self.note.setText(note[:1].upper() + note[1:])
        self.note.setVisible(bool(note))
