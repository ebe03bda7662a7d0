"""Transfer speed over a sliding window, for progress bars (speed and ETA).

Why a window: the average since the start hides a stalled connection, and the
last chunk alone makes the number jump; a few seconds (qutebrowser uses a
similar window) is steady yet responsive.
"""

from __future__ import annotations

import time
from collections import deque


class SpeedMeter:
    """Bytes per second over the last ``window`` seconds."""

    def __init__(self, window: float = 5.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()
        self._start: float | None = None

    def add(self, n: int, now: float | None = None) -> None:
        t = time.monotonic() if now is None else now
        if self._start is None:
            self._start = t
        self._samples.append((t, n))
        while self._samples and t - self._samples[0][0] > self.window:
            self._samples.popleft()

    def speed(self, now: float | None = None) -> float:
        if not self._samples or self._start is None:
            return 0.0
        t = time.monotonic() if now is None else now
        span = max(min(t - self._start, self.window), 1e-3)
        return sum(n for ts, n in self._samples if t - ts <= self.window) / span
