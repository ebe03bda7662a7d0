"""Policies for a target with its own MTP head.

- :class:`MTPPolicy` (mode ``mtp``): a fixed chain from the MTP head.
- :class:`MTPAsDraft`: the adaptive policy with the MTP head in the draft model's
  place (a target with MTP and no draft model): the adaptive cost model learns the
  head's costs and acceptance as it would a draft's, under its own saved state.
- :class:`RateChooser`: a target with MTP *and* a draft model: each reply runs
  one of two adaptive policies (draft model, MTP head), the one with the higher
  measured rate (tokens per second of the steps it ran); one it has not measured
  is tried first, and the other is tried again every ``RETRY_EVERY`` replies so a
  change (a longer conversation, another kind of text) is seen.

All of them only choose what to draft: the reply is verified the same way
whatever they choose.
"""

from __future__ import annotations

from dataclasses import replace

from specula.core.engine.config import SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.fixed import ChainPolicy, DraftPolicy, Outcome, Plan, PlanInput

# An MTP head is trained to predict one token ahead; chained on its own rows its
# acceptance falls with depth (llama.cpp and vLLM default to 1-3 for Qwen3-Next/3.5).
MTP_DRAFT_MAX = 3
RETRY_EVERY = 8  # replies between two tries of the arm that measured slower


class MTPPolicy(ChainPolicy):
    """Mode ``mtp``: draft up to ``min(draft_max, MTP_DRAFT_MAX)`` tokens with the head."""

    name = "mtp"
    wants = frozenset({TokenOrigin.MTP})

    def plan(self, inp: PlanInput) -> Plan:
        k = min(self.cfg.draft_max, MTP_DRAFT_MAX, inp.room)
        if k > 0 and TokenOrigin.MTP in inp.available:
            return Plan(TokenOrigin.MTP, k)
        return Plan(TokenOrigin.TARGET, 0)


class MTPAsDraft:
    """An adaptive policy that drafts with the MTP head where it would use a draft model."""

    def __init__(self, inner: DraftPolicy) -> None:
        self.inner = inner
        self.name = inner.name
        self.wants = frozenset({TokenOrigin.MTP}) | (inner.wants & {TokenOrigin.LOOKUP})

    @property
    def cfg(self) -> SpecConfig:
        return getattr(self.inner, "cfg", SpecConfig())

    @cfg.setter
    def cfg(self, value: SpecConfig) -> None:
        if hasattr(self.inner, "cfg"):
            self.inner.cfg = value

    @property
    def reads_confidence(self) -> bool:
        return self.inner.reads_confidence

    def plan(self, inp: PlanInput) -> Plan:
        avail = set(inp.available) - {TokenOrigin.CHAIN, TokenOrigin.TREE, TokenOrigin.MTP}
        if TokenOrigin.MTP in inp.available:
            avail.add(TokenOrigin.CHAIN)  # the inner policy's draft is the head (chains only)
        plan = self.inner.plan(replace(inp, available=frozenset(avail)))
        if plan.source is TokenOrigin.CHAIN:
            return Plan(TokenOrigin.MTP, min(plan.k, MTP_DRAFT_MAX))
        return plan

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return self.inner.keep_drafting(i, p_top, entropy)

    def observe(self, outcome: Outcome) -> None:
        if outcome.source is TokenOrigin.MTP:
            outcome = replace(outcome, source=TokenOrigin.CHAIN)
        self.inner.observe(outcome)

    def sync_draft_at_prefill(self) -> bool:
        return self.inner.sync_draft_at_prefill()

    def sync_window(self) -> int | None:
        return self.inner.sync_window()

    def sync_after(self) -> int:
        return self.inner.sync_after()

    def finish(self) -> None:
        self.inner.finish()


class RateChooser:
    """Per reply, the faster of a draft-model policy and an MTP policy, by measured rate."""

    name = "adaptive"

    def __init__(self, arms: dict[str, DraftPolicy]) -> None:
        self.arms = arms
        self.rate: dict[str, float] = {}  # tokens per second of each arm's replies (EWMA)
        self.current = next(iter(arms))
        self.wants: frozenset[TokenOrigin] = frozenset()  # the current arm's (per reply)
        self.replies = 0
        self._tokens = 0
        self._seconds = 0.0
        self._pick()

    @property
    def cfg(self) -> SpecConfig:
        return getattr(self.arms[self.current], "cfg", SpecConfig())

    @cfg.setter
    def cfg(self, value: SpecConfig) -> None:
        for arm in self.arms.values():
            if hasattr(arm, "cfg"):
                arm.cfg = value

    @property
    def arm(self) -> DraftPolicy:
        return self.arms[self.current]

    @property
    def reads_confidence(self) -> bool:
        return self.arm.reads_confidence

    def _pick(self) -> None:
        untried = [k for k in self.arms if k not in self.rate]
        if untried:
            self.current = untried[0]
        else:
            best = max(self.rate, key=lambda k: self.rate[k])
            others = [k for k in self.arms if k != best]
            retry = bool(others) and self.replies % RETRY_EVERY == 0
            self.current = others[0] if retry else best
        self.wants = self.arm.wants

    def plan(self, inp: PlanInput) -> Plan:
        return self.arm.plan(inp)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return self.arm.keep_drafting(i, p_top, entropy)

    def observe(self, outcome: Outcome) -> None:
        rec = outcome.record
        self._tokens += rec.emitted
        self._seconds += rec.step_s
        self.arm.observe(outcome)

    def sync_draft_at_prefill(self) -> bool:
        return self.arm.sync_draft_at_prefill()

    def sync_window(self) -> int | None:
        return self.arm.sync_window()

    def sync_after(self) -> int:
        return self.arm.sync_after()

    def finish(self) -> None:
        self.arm.finish()
        if self._tokens and self._seconds > 0:
            r = self._tokens / self._seconds
            old = self.rate.get(self.current, r)
            self.rate[self.current] = old + 0.5 * (r - old)
        self._tokens, self._seconds = 0, 0.0
        self.replies += 1
        self._pick()
