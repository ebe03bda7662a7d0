"""What a step costs on this machine: the target's verify time per batch size and the
draft's time per decode, measured as the engine runs (and at draft load, see
:mod:`specula.core.engine.loop.calibration`).

The adaptive policy chooses a draft length from these figures, so they are kept
per (target, draft, machine) and start the next session (``policy/state.py``).

Robust to a busy machine: each figure is the median of its last WINDOW samples
(a step that another process preempted is one sample among many, not a fifth of
the estimate as in a running average), and every sample's deviation from the
median of its kind is tracked. When the typical deviation passes ERRATIC_DEV the
session's timings are *erratic*: the policy keeps planning with the medians but
never saves them (a contended session must not set the course of later ones).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

MEASURED = 3  # observations of a batch size before its own average replaces the fit
# A catch-up feed of up to SHORT_FEED tokens (the bonus token, a few plain steps) costs
# catchup_per_token per extra token; each token past it costs catchup_long_per_token, far
# less on this machine (one batched feed of a 600-token conversation: ~2.4 ms per token
# against ~11 ms in a feed of 8), which decides whether catching the draft up on a long
# conversation can pay.
SHORT_FEED = 8
WINDOW = 9  # samples per batch size (and of the draft decode) whose median is the figure
# Erratic timings: the median relative deviation of the last DEV_WINDOW samples from the
# median of their kind passes ERRATIC_DEV (a quiet core: 2-6% on the real pairs; a core
# shared with busy loops: 30% and more), judged once ERRATIC_MIN samples are in.
DEV_WINDOW, ERRATIC_MIN, ERRATIC_DEV = 32, 8, 0.15
NOISE_FLOOR_S = 0.002  # a difference below this is a timer's jitter, not contention


def median(xs: list[float] | deque[float]) -> float:
    return float(statistics.median(xs))


@dataclass
class CostModel:
    """Seconds per target verify batch (by size) and per draft decode, as measured."""

    verify: dict[int, float] = field(default_factory=dict)
    verify_n: dict[int, int] = field(default_factory=dict)
    draft: float | None = None
    catchup_per_token: float | None = None  # extra seconds per extra token in a catch-up feed
    catchup_long_per_token: float | None = None  # per token past SHORT_FEED (None: as above)
    # Seconds a drafted step spends keeping a recurrent or hybrid target exact (kv.py): the
    # checkpoint copy before the verify, and the restore and replay after a partial
    # rejection, averaged over drafted steps. None (0) on attention targets.
    rollback: float | None = None
    # This session's samples (never saved): a saved figure counts as one sample.
    verify_window: dict[int, deque[float]] = field(default_factory=dict, repr=False)
    draft_window: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW), repr=False)
    deviations: deque[float] = field(default_factory=lambda: deque(maxlen=DEV_WINDOW), repr=False)
    erratic: bool = False  # this session's timings were erratic at some point (sticky)
    trust_saved: bool = True  # a saved figure is one sample of its window (False: re-measuring)
    # Samples taken this session, per verify size (0 for the draft decode's key), and the
    # sizes whose window holds a figure from before the session as one vote: a figure is
    # this session's only once it has samples of its own (see :meth:`_rescale`).
    fresh: dict[int, int] = field(default_factory=dict, repr=False)
    voted: set[int] = field(default_factory=set, repr=False)
    reference: float | None = None  # the one-token verify the session started from
    # The machine was found faster than the figures the session started from, and no draft
    # step has re-measured them yet: a "does not pay" they say is not to be trusted.
    stale: bool = False
    reprice: bool = False  # the first multi-token verify this session re-prices the others
    reprice_draft: bool = False  # and the first single draft decode the catch-up figures

    def observe_verify(self, n: int, seconds: float) -> None:
        self.verify_n[n] = self.verify_n.get(n, 0) + 1
        win = self.verify_window.get(n)
        if win is None:
            win = self.verify_window[n] = deque(maxlen=WINDOW)
            if n in self.verify and self.trust_saved:
                win.append(self.verify[n])  # the saved (or calibrated) figure: one vote
                self.voted.add(n)
                if n == 1 and not self.fresh.get(1):
                    self.reference = self.verify[1]
        self._deviation(win, seconds)
        win.append(seconds)
        if n >= 2 and self.reprice and not self.fresh.get(n):
            self._reprice(n, seconds)
        self.verify[n] = median(win)
        self.fresh[n] = self.fresh.get(n, 0) + 1
        if n == 1 and self.fresh[1] == MEASURED:
            self._rescale()

    def _reprice(self, n: int, seconds: float) -> None:
        """This session's first verify of ``n`` >= 2 tokens after :meth:`_rescale` found the
        machine faster: the multi-token sizes it has not timed keep their curve's shape
        from the saved figures, at the level this one sets (contention need not stretch a
        one-token verify and a batch alike, so the one-token ratio was a first guess)."""
        self.reprice = False
        old = self.verify.get(n)
        if not old:
            return
        ratio = seconds / old
        for m in self.verify:
            if m >= 2 and m != n and not self.fresh.get(m):
                self.verify[m] *= ratio

    def _rescale(self) -> None:
        """The session's own one-token verify, once measured MEASURED times, against the one
        it started from (saved by an earlier session, or timed at load): where the machine is
        faster now by more than ERRATIC_DEV, the figures it has not re-measured yet were
        taken while it was slower (another process shared the core, steadily enough not to
        read as erratic) and are scaled by the same ratio. Else a saved "no chain can pay",
        priced by multi-token verifies from a busy hour, would hold a quiet session plain:
        nothing drafts, so nothing re-measures them (a 2-token verify at 5.5 plain steps).
        The scaled figures stay ``stale`` until a draft step re-measures them: contention
        need not stretch every batch size alike, so the policy re-measures before it
        trusts a "does not pay" they still say (``ProbeCadence._probe_now``)."""
        ref, self.reference = self.reference, None
        win = self.verify_window[1]
        now = median(list(win)[-min(self.fresh[1], len(win)):])
        if ref is None or now >= (1.0 - ERRATIC_DEV) * ref:
            return
        ratio = now / ref
        self.stale = self.reprice = self.reprice_draft = True
        for n, w in self.verify_window.items():
            if n in self.voted:  # the old figure's vote, at the window's start
                w[0] *= ratio
                self.verify[n] = median(w)
        for n in self.verify:
            if n not in self.verify_window:
                self.verify[n] *= ratio
        if self.draft_window and 0 in self.voted:
            self.draft_window[0] *= ratio
            self.draft = median(self.draft_window)
        elif not self.draft_window and self.draft is not None:
            self.draft *= ratio
            for name in ("catchup_per_token", "catchup_long_per_token", "rollback"):
                v = getattr(self, name)
                setattr(self, name, None if v is None else v * ratio)

    def _deviation(self, win: deque[float], seconds: float) -> None:
        """Note how far a sample lies from the median of its kind (once that means something)."""
        if len(win) >= 2:
            ref = median(win)
            if ref > 0:
                off = abs(seconds - ref)
                self.deviations.append(off / ref if off > NOISE_FLOOR_S else 0.0)
        if len(self.deviations) >= ERRATIC_MIN and self.spread() > ERRATIC_DEV:
            self.erratic = True

    def spread(self) -> float:
        """The typical relative deviation of a recent sample from its kind's median."""
        return median(self.deviations) if self.deviations else 0.0

    def remeasure(self) -> None:
        """From now on each figure is what this session measures, the saved one forgotten as
        soon as a sample replaces it (a re-check of a verdict those figures made)."""
        self.verify_window.clear()
        self.draft_window.clear()
        self.voted.clear()
        self.trust_saved = False

    def observe_draft(self, n_decodes: int, catchup: int, seconds: float) -> None:
        if n_decodes <= 0:
            return
        per = seconds / n_decodes
        if self.reprice_draft and catchup <= 1 and self.draft:
            # as _reprice: the catch-up figures from a slower machine, at the level of this
            # session's first draft decode
            self.reprice_draft = False
            for name in ("catchup_per_token", "catchup_long_per_token"):
                v = getattr(self, name)
                if v is not None:
                    setattr(self, name, v * per / self.draft)
        if catchup > 1 and self.draft is not None:
            extra = max(seconds - n_decodes * self.draft, 0.0)
            if catchup > SHORT_FEED and self.catchup_per_token is not None:
                long = max(extra - self.catchup_per_token * (SHORT_FEED - 1), 0.0) / (catchup - SHORT_FEED)
                old = self.catchup_long_per_token if self.catchup_long_per_token is not None else long
                self.catchup_long_per_token = old + 0.5 * (long - old)
                return
            extra /= catchup - 1
            old = self.catchup_per_token if self.catchup_per_token is not None else extra
            self.catchup_per_token = old + 0.2 * (extra - old)
            return  # a catch-up step says little about one decode
        if not self.draft_window and self.draft is not None and self.trust_saved:
            self.draft_window.append(self.draft)
            self.voted.add(0)
        self.stale = False  # a draft step of this session: its costs are measured now
        self._deviation(self.draft_window, per)
        self.draft_window.append(per)
        self.draft = median(self.draft_window)

    def observe_rollback(self, seconds: float) -> None:
        """A drafted step's checkpoint, restore and replay seconds (0 when all was kept)."""
        self.rollback = seconds if self.rollback is None else self.rollback + 0.2 * (seconds - self.rollback)

    def rollback_time(self) -> float:
        """What a drafted step is expected to spend keeping the target's memory exact."""
        return self.rollback or 0.0

    def verify_time(self, n: int) -> float | None:
        """Verify seconds for a batch of n tokens: a weighted line through what was measured.

        One line V(n) = a + b (n - 1) over every batch size seen, weighted by how
        often each was seen, so that a rare size (the plain step, when drafting
        usually wins) borrows strength from the common ones and one slow outlier
        cannot make plain decoding look slower than it is.
        """
        if self.verify_n.get(n, 0) >= MEASURED:
            # Measured often enough, a batch size is its own number: verify time is not
            # linear (one token takes the matrix-vector path; kernels change tiles at
            # some batch sizes, e.g. 5 tokens cost 1.6x 4 tokens for an F16 target here).
            # First: the policy asks this dozens of times a step.
            return self.verify[n]
        known = [m for m in self.verify if self.verify_n.get(m, 0) > 0]
        if not known:
            return None
        batches = [m for m in known if m >= 2]
        if n >= 2 and len(batches) >= 2:
            known = batches
        if len(known) == 1:
            m = known[0]
            v1 = self.verify[m] / (1 + 0.5 * (m - 1))  # prior: k tokens ~ 1 + 0.5(k-1) steps
            return v1 * (1 + 0.5 * (n - 1))
        w = [min(self.verify_n[m], 20) for m in known]
        x = [m - 1 for m in known]
        y = [self.verify[m] for m in known]
        sw = sum(w)
        mx = sum(wi * xi for wi, xi in zip(w, x, strict=True)) / sw
        my = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / sw
        sxx = sum(wi * (xi - mx) ** 2 for wi, xi in zip(w, x, strict=True))
        sxy = sum(wi * (xi - mx) * (yi - my) for wi, xi, yi in zip(w, x, y, strict=True))
        slope = max(sxy / sxx, 0.0) if sxx > 0 else 0.0
        intercept = my - slope * mx
        if intercept <= 0:  # a degenerate fit: fall back to the nearest measurement
            nearest = min(known, key=lambda m: abs(m - n))
            return self.verify[nearest]
        return intercept + slope * (n - 1)

    def catchup_time(self, tokens: int) -> float:
        if tokens <= 1 or self.draft is None:
            return 0.0
        per = self.catchup_per_token if self.catchup_per_token is not None else 0.3 * self.draft
        if tokens <= SHORT_FEED:
            return per * (tokens - 1)
        long = self.catchup_long_per_token if self.catchup_long_per_token is not None else per
        return per * (SHORT_FEED - 1) + long * (tokens - SHORT_FEED)


class Seeder(Protocol):
    """What fills a new pair's cost model: the timing at load (``loop/calibration.py``, beside
    the loop: it times native decodes), kept out of the policy's arithmetic."""

    def seed(self, cost: CostModel) -> bool:
        """Fill ``cost`` (or replace figures taken on a slower machine); whether it did."""
        ...
