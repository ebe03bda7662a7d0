"""What each kind of step is expected to yield per second, from the measured costs and
the learnt acceptance: the arithmetic the adaptive policy plans with.

A step's time is the draft's catch-up share, its draft decodes, the target's verify of
the proposal and the pending token, and on a recurrent or hybrid target the rollback
that keeps it exact; its tokens are what the acceptance model expects a chain of that
length to yield. The policy (``adaptive.py``) sets the reply's state these read (the
draft's lag, the room left, whether the prompt catch-up is the reply's first, the
share of steps lookup serves) and chooses by these rates.
"""

from __future__ import annotations

from specula.core.engine.config import SpecConfig
from specula.core.engine.policy import planner
from specula.core.engine.policy.acceptance_model import AcceptanceModel
from specula.core.engine.policy.cost_model import CostModel
from specula.core.engine.policy.fixed import PlanInput
from specula.core.engine.policy.governor import Governor
from specula.core.engine.policy.hindsight import Hindsight
from specula.core.engine.stats import StepRecord

MARGIN = 0.02  # expected gain over plain decoding needed before drafting (noisy estimates)
COULD_PAY_MARGIN = 0.05  # gain at 100% acceptance a draft must offer before it is ever probed
# The draft's first catch-up in a reply (the conversation) is paid as an exploration cost,
# as feeding it at prefill did, while it is at most SUNK_SHARE of the reply's plain time; a
# longer one is weighed like any other one-time catch-up.
SUNK_SHARE = 0.1
# ... except on a pair where drafting barely pays (it saves less than NEAR_TIE of a plain step
# per token: a compute-bound target) and would not repay the catch-up within SHORT_ANSWER
# tokens. A reply's length is not known, and there a short answer spends more on the catch-up
# than it can win back (an 18-token answer at 0.87x of plain, beside llama-server): the reply
# runs plain until it has SHORT_ANSWER tokens, and only then is the catch-up paid as
# exploration. A short answer never pays it; a longer reply drafts from there on, having lost
# little (by the same estimates, drafting gained under NEAR_TIE over those tokens).
SHORT_ANSWER = 24
NEAR_TIE = 0.1


class ExpectedRates:
    """Expected tokens/s of plain, draft-chain, lookup and tree steps (the policy's base)."""

    cfg: SpecConfig
    cost: CostModel
    acc: AcceptanceModel
    _lag: int  # tokens the draft must be fed before it can draft
    _room: int  # tokens the reply may still draft
    _fresh: bool  # the draft has not been fed this reply's prompt yet
    _reply_tokens: int  # tokens this reply has emitted
    lookup_cover: float  # share of recent steps lookup served
    hindsight: Hindsight  # what each chain length would have had on recent steps
    governor: Governor  # the judgement between replies (governor.py)

    @property
    def paused(self) -> bool:
        """The last judgement: drafting does not pay here (paused, or held by the stop-loss)."""
        return self.governor.paused

    def verify_s(self, n: int) -> float:
        """Verify seconds for n tokens (callers check that something was measured)."""
        v = self.cost.verify_time(n)
        if v:
            return v
        v1 = self.cost.verify_time(1) or 0.0
        return v1 * (1 + 0.5 * (n - 1))

    def _catch_terms(self) -> planner.CatchUp | None:
        """This step's catch-up (None when it is sunk: as if the draft had been fed the prompt
        at prefill). A lag of 1-2 tokens recurs every step (the bonus token, and the last
        drafted one the draft never fed) and is paid in full; a longer one (the
        conversation, which the draft is fed only once drafting pays, or what lookup and
        plain steps emitted) is paid once and then serves the draft steps left: the steps
        left less the share lookup is expected to serve, so that a conversation lookup
        copies from never pays the draft's prefill for a few draft steps."""
        if self._sunk(self._lag):
            return None
        return planner.CatchUp(self.cost.catchup_time(min(self._lag, 2)), self._once(self._lag),
                               self._room * (1.0 - self.lookup_cover))

    def _once(self, lag: int) -> float:
        """The one-time part of a catch-up of ``lag`` tokens (0 when paid as exploration)."""
        if self._sunk(lag):
            return 0.0
        return self.cost.catchup_time(lag) - self.cost.catchup_time(min(lag, 2))

    def _sunk(self, lag: int) -> bool:
        """Whether this catch-up is the reply's first (the prompt), short against the reply
        (SUNK_SHARE, less the share lookup has been serving) and not held back for a short
        answer's length (:meth:`_first_catchup`): paid as exploration, as feeding the draft
        at prefill did."""
        return self._first_catchup(lag) == "sunk"

    def _first_catchup(self, lag: int) -> str:
        """How the reply's first catch-up of ``lag`` tokens is weighed: "sunk" (paid as
        exploration), "late" (short against the reply, but on a near tie drafting saves
        too little per token to repay it within SHORT_ANSWER tokens, and the reply is still
        shorter than that: plain steps run until the reply has shown it is not a short
        answer; then it is sunk), or "cost" (weighed like any other one-time catch-up;
        also every catch-up after the first)."""
        if not self._fresh:
            return "cost"
        v1 = self.cost.verify_time(1) or 0.0
        c = self.cost.catchup_time(lag)
        if c > SUNK_SHARE * self._room * v1 * (1.0 - self.lookup_cover):
            return "cost"
        if self._reply_tokens >= SHORT_ANSWER:
            return "sunk"
        rate = self.draft_pays_rate(self.cfg.draft_max, fed=True)
        gain = v1 - 1.0 / rate if rate > 0 else 0.0  # seconds a drafted token saves
        return "sunk" if gain >= NEAR_TIE * v1 or c <= SHORT_ANSWER * gain else "late"

    def draft_rate(self, k_max: int, a: float | None = None, *, fed: bool = False) -> tuple[float, int]:
        """Best expected tokens/s of a draft chain (and its length) at per-token acceptance
        ``a`` (default: what the pair's chains measured, depth by depth); ``fed``: as if the
        draft had been fed the conversation at prefill (no catch-up)."""
        if self.cost.draft is None or self.cost.verify_time(1) is None:
            return 0.0, 0
        expected = (self.acc.expected_upto(k_max) if a is None
                    else [planner.expected_tokens(a, k) for k in range(1, k_max + 1)])
        return planner.best_chain(expected, self.cost.draft, self.verify_s,
                                  catchup=None if fed else self._catch_terms(), rollback_s=self._rollback())

    def draft_pays_rate(self, k_max: int, *, fed: bool = False) -> float:
        """The draft chain's rate that decides between drafting and not: the expected one,
        or while the pair's acceptance rests on little evidence the rate at one standard
        error above it (``AcceptanceModel.optimistic_rate``), so a few unlucky probe steps
        do not stop drafting for the reply and the replies after it.

        Two exceptions. Where no chain could beat plain decoding by COULD_PAY_MARGIN even at
        100% acceptance (:meth:`could_pay`), 0: a gain that small is within the measured
        costs' own spread, and drafting there staked the draft's catch-up and every
        rejection on it (the compute-bound pair on a day its draft decode took 74-97 ms).
        And while drafting is paused, the expected rate alone: the benefit of the doubt
        keeps thin evidence from pausing a pair, not a probe's few steps from lifting a
        pause (a probe's evidence is thin by design, PROBE_EVIDENCE; on the compute-bound
        pair the probes of a paused draft drafted on, by the optimistic rate, into replies
        at 0.88x-0.98x of plain, docs/lab/2026-12-03-probe-window.md)."""
        v1 = self.cost.verify_time(1)
        if v1 is not None and self.cost.draft is not None and not self.could_pay(v1):
            return 0.0
        rate, _ = self.draft_rate(k_max, fed=fed)
        a = self.acc.optimistic_rate()
        if a is None or self.paused:
            return rate
        return max(rate, self.draft_rate(k_max, a=a, fed=fed)[0])

    def lookup_rate(self, inp: PlanInput, k_max: int, a: float | None = None) -> tuple[float, int]:
        """Best expected tokens/s of a lookup chain (and its length) at acceptance ``a``
        (default: what this match length has earned)."""
        if not inp.lookup_tokens or self.cost.verify_time(1) is None:
            return 0.0, 0
        a = self.acc.predict_lookup(inp.lookup_match) if a is None else a
        return planner.best_lookup(a, min(k_max, len(inp.lookup_tokens)), self.verify_s, self._rollback())

    def _chain_in_place(self, rec: StepRecord, run: int, depth: int) -> float:
        """The rate a chain would have had on a tree step's text. The tree's top path is the
        draft's own chain (``depth`` tokens), so the chain's run there is known (``run``): it
        drafts the length chains draft now (the hindsight cap), or, where the whole top path
        was accepted and what lies past it is unknown, that path's length (a chain that
        stops there: what it would have had at least). Each part is timed by the cost model.
        Measured beside the tree on the same text, the chain's rate cannot go stale while a
        tree holds the turn (shapes.py; docs/lab/2026-12-02-second-machine.md)."""
        k = self.hindsight.cap(self.cfg.draft_max)
        if run >= depth:
            k = max(depth, 1)
        t_d = self.cost.draft or 0.0
        secs = self.cost.catchup_time(rec.catchup) + k * t_d + self.verify_s(k + 1) + rec.overhead_s
        return (min(run, k) + 1) / max(secs, 1e-9)

    def _tree_best_case(self, depth: int) -> float:
        """Tokens/s of a tree were every level accepted: depth + 1 tokens for at least one
        draft decode per level and a verify of every node (a tree fills its budget)."""
        w = max(self.cfg.tree_width, 1)
        nodes = min(self.cfg.tree_budget, sum(w ** d for d in range(1, depth + 1)))
        return planner.tree_best_case(depth, nodes, self.cost.draft or 0.0, self.verify_s,
                                      catchup=self._catch_terms(), rollback_s=self._rollback())

    def _rollback(self) -> float:
        """Seconds a drafted step spends keeping a recurrent or hybrid target exact
        (checkpoint, restore, replay: kv.py); 0 on attention targets."""
        return self.cost.rollback_time()

    def could_pay(self, v1: float) -> bool:
        """Whether some chain length would beat plain decoding were every draft token
        accepted (the measured costs alone decide: on a compute-bound target the
        draft can cost more than it could ever save, and probing it is pure loss)."""
        d = self.cost.draft or 0.0
        for k in range(1, self.cfg.draft_max + 1):
            if (k + 1) / (k * d + self.verify_s(k + 1) + self._rollback()) > (1.0 + COULD_PAY_MARGIN) / v1:
                return True
        return False
