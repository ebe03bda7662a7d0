"""Live statistics for the reply being generated, refreshed 5 times a second.

Batches from the engine worker only store the latest numbers; a timer paints
them, so the view never updates once per token.
"""

from __future__ import annotations

from typing import ClassVar

import psutil
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QVBoxLayout, QWidget

from specula.core.engine.stats import GenerationStats
from specula.gui.engine_worker import ReplyBatch
from specula.gui.stats.chart import RateChart
from specula.gui.stats.series import RollingSeries

REFRESH_MS = 200


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:.2f} GiB"


class StatsPanel(QFrame):
    ROWS: ClassVar[list[tuple[str, str]]] = [
        ("tokens", "Tokens"), ("drafted", "Drafted"), ("accepted", "Accepted"),
        ("acceptance", "Acceptance"), ("per_step", "Mean accepted / step"),
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
        self.big = QLabel("–")
        self.big.setObjectName("StatsBig")
        lay.addWidget(self.big)
        sub = QLabel("tokens per second")
        sub.setObjectName("Muted")
        lay.addWidget(sub)
        self.chart = RateChart(self)
        lay.addWidget(self.chart)
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(3)
        self.values: dict[str, QLabel] = {}
        for row, (key, label) in enumerate(self.ROWS):
            name = QLabel(label)
            name.setObjectName("Muted")
            value = QLabel("–")
            value.setObjectName("StatValue")
            grid.addWidget(name, row, 0)
            grid.addWidget(value, row, 1)
            self.values[key] = value
        lay.addLayout(grid)
        self.series = RollingSeries()
        self.stats: GenerationStats | None = None
        self.backend = ""
        self.n_threads = 0
        self._dirty = False
        self.refreshes = 0  # how many times the numbers were repainted (tests read it)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self.refresh()

    def set_engine(self, backend: str, n_threads: int) -> None:
        self.backend, self.n_threads = backend, n_threads
        self._dirty = True

    def start_reply(self) -> None:
        self.series.clear()
        self.stats = None
        self._dirty = True

    def add_batch(self, batch: ReplyBatch) -> None:
        for step in batch.steps:
            self.series.add(step)
        if batch.stats is not None:
            self.stats = batch.stats
        self._dirty = True

    def finish(self, stats: GenerationStats) -> None:
        self.stats = stats
        self.refresh()

    def _tick(self) -> None:
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        self._dirty = False
        self.refreshes += 1
        s, v = self.stats, self.values
        rss = psutil.Process().memory_info().rss
        v["memory"].setText(_mib(rss))
        v["backend"].setText(self.backend or "–")
        v["threads"].setText(str(self.n_threads) if self.n_threads else "–")
        self.chart.set_points(self.series.points)
        if s is None:
            self.big.setText("–")
            for key in ("tokens", "drafted", "accepted", "acceptance", "per_step", "ttft", "mode"):
                v[key].setText("–")
            return
        self.big.setText(f"{s.tokens_per_s:.1f}")
        v["tokens"].setText(str(s.tokens))
        v["drafted"].setText(str(s.drafted))
        v["accepted"].setText(str(s.accepted))
        v["acceptance"].setText(f"{s.acceptance_rate:.0%}" if s.drafted else "–")
        v["per_step"].setText(f"{s.mean_accepted_per_step:.2f}" if s.drafted else "–")
        v["ttft"].setText(f"{s.ttft_s * 1000:.0f} ms")
        v["mode"].setText(s.mode)
