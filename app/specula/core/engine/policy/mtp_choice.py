"""Policies for drafters other than the draft model: the target's MTP head and the heads
(EAGLE-3, DFlash) that registry.py lists as drafter kinds.

- :class:`MTPPolicy` (mode ``mtp``): a fixed chain from the MTP head.
- :class:`HeadAsDraft`: the adaptive policy with a head in the draft model's place: the
  adaptive cost model learns the head's costs and acceptance as it would a draft's,
  under its own saved state.
- :class:`RateChooser`: several drafters loaded (a draft model and a head, or two
  heads): each reply runs one adaptive policy per drafter, the one with the highest
  measured rate (tokens per second of the steps it ran); one not measured yet is
  tried first, and the others in turn every ``RETRY_EVERY`` replies so a change (a
  longer conversation, another kind of text) is seen.

All of them only choose what to draft: the reply is verified the same way
whatever they choose.
"""

from __future__ import annotations

from dataclasses import replace

from specula.core.engine.config import SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.fixed import ChainPolicy, DraftPolicy, Outcome, Plan, PlanInput
from specula.core.engine.verdict import PolicyVerdict

# An MTP head is trained to predict one token ahead; chained on its own rows its
# acceptance falls with depth (llama.cpp and vLLM default to 1-3 for Qwen3-Next/3.5).
MTP_DRAFT_MAX = 3
RETRY_EVERY = 8  # replies between two tries of an arm that measured slower


class MTPPolicy(ChainPolicy):
    """Mode ``mtp``: draft up to ``min(draft_max, MTP_DRAFT_MAX)`` tokens with the head."""

    name = "mtp"
    wants = frozenset({TokenOrigin.MTP})

    def plan(self, inp: PlanInput) -> Plan:
        k = min(self.cfg.draft_max, MTP_DRAFT_MAX, inp.room)
        if k > 0 and TokenOrigin.MTP in inp.available:
            return Plan(TokenOrigin.MTP, k)
        return Plan(TokenOrigin.TARGET, 0)


class _Delegate:
    """A policy that answers with another's (``inner``) wherever it adds nothing."""

    @property
    def inner(self) -> DraftPolicy:
        raise NotImplementedError

    @property
    def cfg(self) -> SpecConfig:
        return self.inner.cfg

    @cfg.setter
    def cfg(self, value: SpecConfig) -> None:
        self.inner.cfg = value

    @property
    def reads_confidence(self) -> bool:
        return self.inner.reads_confidence

    def plan(self, inp: PlanInput) -> Plan:
        return self.inner.plan(inp)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return self.inner.keep_drafting(i, p_top, entropy)

    def observe(self, outcome: Outcome) -> None:
        self.inner.observe(outcome)

    def sync_draft_at_prefill(self) -> bool:
        return self.inner.sync_draft_at_prefill()

    def sync_window(self) -> int | None:
        return self.inner.sync_window()

    def sync_after(self) -> int:
        return self.inner.sync_after()

    def finish(self) -> None:
        self.inner.finish()

    def verdict(self) -> PolicyVerdict | None:
        return self.inner.verdict()

    def clear(self) -> None:
        self.inner.clear()


class HeadAsDraft(_Delegate):
    """An adaptive policy that drafts with a head (``origin``: MTP, or a drafters issue's
    head) where it would use a draft model: chains only, at most ``max_k`` tokens."""

    def __init__(self, inner: DraftPolicy, origin: TokenOrigin = TokenOrigin.MTP,
                 max_k: int = MTP_DRAFT_MAX) -> None:
        self._inner = inner
        self.origin = origin
        self.max_k = max_k
        self.name = inner.name
        self.wants = frozenset({origin}) | (inner.wants & {TokenOrigin.LOOKUP})

    @property
    def inner(self) -> DraftPolicy:
        return self._inner

    def plan(self, inp: PlanInput) -> Plan:
        avail = set(inp.available) - {TokenOrigin.CHAIN, TokenOrigin.TREE, self.origin}
        if self.origin in inp.available:
            avail.add(TokenOrigin.CHAIN)  # the inner policy's draft is the head (chains only)
        plan = self.inner.plan(replace(inp, available=frozenset(avail)))
        if plan.source is TokenOrigin.CHAIN:
            return Plan(self.origin, min(plan.k, self.max_k))
        return plan

    def observe(self, outcome: Outcome) -> None:
        if outcome.source is self.origin:
            outcome = replace(outcome, source=TokenOrigin.CHAIN)
        self.inner.observe(outcome)


MTPAsDraft = HeadAsDraft  # the MTP head's case, by its old name


class RateChooser(_Delegate):
    """Per reply, the fastest of one adaptive policy per drafter, by measured rate."""

    name = "adaptive"

    def __init__(self, arms: dict[str, DraftPolicy]) -> None:
        self.arms = arms
        self.rate: dict[str, float] = {}  # tokens per second of each arm's replies (EWMA)
        self.current = next(iter(arms))
        self.last = self.current  # the arm that ran the last reply (its verdict is shown)
        self.wants: frozenset[TokenOrigin] = frozenset()  # the current arm's (per reply)
        self.replies = 0
        self._tokens = 0
        self._seconds = 0.0
        self._pick()

    @property
    def inner(self) -> DraftPolicy:
        return self.arms[self.current]

    @property
    def arm(self) -> DraftPolicy:
        return self.inner

    @property
    def cfg(self) -> SpecConfig:
        return self.inner.cfg

    @cfg.setter
    def cfg(self, value: SpecConfig) -> None:
        for arm in self.arms.values():
            arm.cfg = value

    def _pick(self) -> None:
        untried = [k for k in self.arms if k not in self.rate]
        if untried:
            self.current = untried[0]
        else:
            best = max(self.rate, key=lambda k: self.rate[k])
            others = [k for k in self.arms if k != best]
            # every RETRY_EVERY replies one of the slower arms runs again, each in turn
            retry = bool(others) and self.replies % RETRY_EVERY == 0
            turn = (self.replies // RETRY_EVERY) % max(len(others), 1)
            self.current = others[turn] if retry else best
        self.wants = self.inner.wants

    def observe(self, outcome: Outcome) -> None:
        rec = outcome.record
        self._tokens += rec.emitted
        self._seconds += rec.step_s
        self.inner.observe(outcome)

    def finish(self) -> None:
        self.inner.finish()
        if self._tokens and self._seconds > 0:
            r = self._tokens / self._seconds
            old = self.rate.get(self.current, r)
            self.rate[self.current] = old + 0.5 * (r - old)
        self._tokens, self._seconds = 0, 0.0
        self.replies += 1
        self.last = self.current
        self._pick()

    def verdict(self) -> PolicyVerdict | None:
        """The verdict of the arm that ran the last reply (the one the user just saw)."""
        return self.arms[self.last].verdict()

    def clear(self) -> None:
        """Every arm forgets its costs, and every arm's rate goes: each is tried again."""
        for arm in self.arms.values():
            arm.clear()
        self.rate = {}
        self._pick()
