"""How a decode step is timed, so that a step's host time is measured, not guessed.

Steps are timed back to back (the consumer's time between them left out), and every
llama_decode is timed where it happens (``Context.decode_s``), so a step's host time
is its wall time minus its decodes: sampling, the drafter's Python work, acceptance,
events and bookkeeping all count, whichever code they are in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from specula.core.engine.native.checkpoints import KVCosts

MirrorCosts = tuple[KVCosts, KVCosts]  # the target's cache, the draft's


@dataclass(frozen=True)
class Lap:
    """One step's times, read when its record is made."""

    at: float  # perf_counter when read
    wall_s: float  # since the step began
    host_s: float  # of wall_s: outside every llama_decode
    target_kv: KVCosts  # keeping the target's cache exact during the step
    draft_kv: KVCosts  # the same for the draft's


class StepClock:
    """The running clock of one reply's steps."""

    def __init__(self, decode_clock: Callable[[], float], mirror: Callable[[], MirrorCosts]) -> None:
        self._decode_clock, self._mirror = decode_clock, mirror
        self._restart(time.perf_counter())

    def _restart(self, t: float) -> None:
        self._t_step = t
        self._decode0 = self._decode_clock()
        self._costs0 = self._mirror()

    @contextmanager
    def left_out(self) -> Iterator[None]:
        """Work inside this block is not the step's (a draft's deferred prefill is reported
        on its own): its wall time and decodes are taken off the step's."""
        d0, t0 = self._decode_clock(), time.perf_counter()
        yield
        self._t_step += time.perf_counter() - t0
        self._decode0 += self._decode_clock() - d0

    def lap(self) -> Lap:
        """The step's times so far."""
        t = time.perf_counter()
        wall = t - self._t_step
        now = self._mirror()
        host = max(wall - (self._decode_clock() - self._decode0), 0.0)
        return Lap(t, wall, host, now[0].since(self._costs0[0]), now[1].since(self._costs0[1]))

    def next_step(self, lap: Lap, handed_out_at: float) -> None:
        """Start the next step: it begins with this step's bookkeeping after ``lap`` (up to
        ``handed_out_at``, when its events went to the consumer), not with the consumer's time."""
        self._restart(time.perf_counter() - (handed_out_at - lap.at))
