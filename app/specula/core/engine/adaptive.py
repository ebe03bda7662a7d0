"""The adaptive policy: draft what pays on this machine, for this pair, right now.

Each step it maximises expected *tokens per second* (not tokens per step:
SpecKV's per-step objective rewards long drafts that cost more than they
save). It keeps

* a cost model, measured as it runs: the draft's time per decode, the cost of
  catching the draft up after steps it sat out, and the target's verify time
  for each batch size;
* an acceptance model: the probability that a draft token is accepted given
  the draft's confidence (top probability) and entropy, as Beta counts per
  bin, and for prompt lookup per matched n-gram length.

A step can be plain (k = 0), a draft-model chain cut token by token when the
next token is not worth its cost, or a prompt-lookup chain. When plain wins it
still probes now and then (with exponential back-off) so that a change of
regime is noticed. Both models are saved per (target, draft, machine) so the
next session starts informed.
"""

from __future__ import annotations

from pathlib import Path

from specula.core.engine import policy_state
from specula.core.engine.acceptance_model import AcceptanceModel
from specula.core.engine.config import SpecConfig
from specula.core.engine.cost_model import MEASURED, CostModel, expected_tokens
from specula.core.engine.drafters.base import DraftSource
from specula.core.engine.policy import Outcome, Plan, PlanInput

__all__ = ["AcceptanceModel", "AdaptivePolicy", "CostModel", "expected_tokens"]

PROBE_FIRST, PROBE_MAX = 1, 16  # replies between probes of a draft that does not pay
PROBE_STEPS = 3  # draft steps a probe makes
MARGIN = 0.05  # expected gain over plain decoding needed before drafting
REFRESH_PLAIN = 48  # steps between plain steps that re-measure one-token decodes


class AdaptivePolicy:
    name = "adaptive"

    def __init__(self, cfg: SpecConfig, state_path: Path | None = None, *,
                 allow_draft: bool = True) -> None:
        self.cfg = cfg
        self.allow_draft = allow_draft
        self.wants = frozenset(DraftSource) - {DraftSource.NONE}
        if not allow_draft:
            self.name = "lookup"  # prompt lookup alone, with the same cost model
            self.wants = frozenset({DraftSource.LOOKUP})
        self.cost = CostModel()
        self.acc = AcceptanceModel()
        self.state_path = state_path
        self.probe_every = PROBE_FIRST
        self.replies_since_probe = 0
        self.since_plain = 0
        self.tree_tries = 0
        self._probe_left = 0
        self._lag = 1  # tokens the draft must be fed before it can draft
        self._room = 1  # tokens the reply may still draft (the plan's room)
        self._probe = False
        # Measured tokens/s of draft-model steps by shape; a tree is tried now and then and
        # used while it beats the chain on this machine.
        self.shape_rate: dict[str, float] = {}
        self.draft_steps = 0
        self._step: dict[str, float] = {}
        if state_path is not None:
            self.load(state_path)

    # -- planning ------------------------------------------------------------

    def _draft_rate(self, k_max: int) -> tuple[float, int]:
        """Best expected tokens/s of a draft chain (and its length) at the typical acceptance."""
        v1 = self.cost.verify_time(1)
        if self.cost.draft is None or v1 is None:
            return 0.0, 0
        a = self.acc.first_rate
        best, best_k = 0.0, 0
        catch = self.cost.catchup_time(self._lag)
        for k in range(1, k_max + 1):
            e = expected_tokens(a, k)
            share = catch
            if self._lag > k_max + 1:
                # A long catch-up (the draft's feed of the prompt after the first token) is
                # paid once and serves every later step: each step bears its share over the
                # steps left, or drafting would never start after a deferred draft prefill.
                share = catch * min(1.0, e / max(self._room, 1))
            t = share + k * self.cost.draft + (self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k))
            rate = e / t
            if rate > best:
                best, best_k = rate, k
        return best, best_k

    def _lookup_rate(self, inp: PlanInput, k_max: int) -> tuple[float, int]:
        v1 = self.cost.verify_time(1)
        if not inp.lookup_tokens or v1 is None:
            return 0.0, 0
        a = self.acc.predict_lookup(inp.lookup_match)
        best, best_k = 0.0, 0
        for k in range(1, min(k_max, len(inp.lookup_tokens)) + 1):
            rate = expected_tokens(a, k) / (self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k))
            if rate > best:
                best, best_k = rate, k
        return best, best_k

    def plan(self, inp: PlanInput) -> Plan:
        k_max = min(self.cfg.draft_max, inp.room)
        self._lag = inp.draft_lag
        self._room = inp.room
        v1 = self.cost.verify_time(1)
        self.since_plain += 1
        if k_max <= 0 or v1 is None or self.since_plain >= REFRESH_PLAIN:
            # measure a plain step first, and now and then again: drafting is judged
            # against it, and it is rarely measured while drafting wins
            self.since_plain = 0
            return self._decide(Plan(DraftSource.NONE, 0))
        plain = 1.0 / v1
        if self._lookup_untried(inp):  # cheap exploration: one token
            return self._decide(Plan(DraftSource.LOOKUP, 1, inp.lookup_tokens[:1]), probe=True)
        l_rate, l_k = self._lookup_rate(inp, k_max)
        d_rate = 0.0
        if inp.has_draft and self.allow_draft:
            in_sync = inp.draft_lag <= 2
            if in_sync and (self.cost.draft is None or self._probe_left > 0):
                self._probe_left = max(self._probe_left - 1, 0)
                return self._decide(Plan(DraftSource.DRAFT, min(2, k_max)), probe=True)
            d_rate, _ = self._draft_rate(k_max)
            k_new = self._unmeasured_k(k_max)
            if in_sync and k_new and d_rate > 0.6 * plain:
                return self._decide(Plan(DraftSource.DRAFT, k_new), probe=True)
        # A margin over plain: the models are estimates on a noisy machine, and every
        # switch from plain to drafting pays for catching the draft up.
        bar = plain * (1.0 + MARGIN)
        if l_rate > max(bar, d_rate):
            return self._decide(Plan(DraftSource.LOOKUP, l_k, inp.lookup_tokens[:l_k]))
        if d_rate > bar:
            return self._decide(self._shape(k_max, plain))
        return self._decide(Plan(DraftSource.NONE, 0))

    def _unmeasured_k(self, k_max: int) -> int:
        """A draft length whose verify batch has not been timed enough yet (0: none).

        Verify time can jump between batch sizes, so each length up to the maximum
        is measured a few times before the model is trusted (once per pair and
        machine: the measurements are saved).
        """
        for k in range(1, k_max + 1):
            if self.cost.verify_n.get(k + 1, 0) < MEASURED:
                return k
        return 0

    def _shape(self, k_max: int, plain: float) -> Plan:
        """Chain or tree: a tree is tried twice, then every 32 draft steps, and used while
        its measured rate beats both the chain's and plain decoding's."""
        chain = Plan(DraftSource.DRAFT, k_max)
        if self.cfg.tree_budget <= 1:
            return chain
        self.draft_steps += 1
        c_rate, t_rate = self.shape_rate.get("draft"), self.shape_rate.get("tree")
        if c_rate is None:
            return chain
        if t_rate is None or self.tree_tries < 2 or self.draft_steps % 32 == 0:
            self.tree_tries += 1
            return Plan(DraftSource.TREE, self.cfg.tree_budget)
        return Plan(DraftSource.TREE, self.cfg.tree_budget) if t_rate > max(c_rate, plain) else chain

    def _lookup_untried(self, inp: PlanInput) -> bool:
        """A match of 3+ tokens whose length has been judged fewer than 4 times."""
        return (
            bool(inp.lookup_tokens) and inp.lookup_match >= 3
            and self.acc.lookup_tot.get(inp.lookup_match, 0.0) < 4
        )

    def _decide(self, plan: Plan, probe: bool = False) -> Plan:
        self._probe = probe
        if plan.source == DraftSource.DRAFT:
            t_d = self.cost.draft or 0.0
            self._step = {"E": 1.0, "P": 1.0, "D": self.cost.catchup_time(self._lag) + t_d,
                          "k": float(plan.k)}
        return plan

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        if p_top < self.cfg.p_min:
            return False, False
        if self._probe:  # a probe measures: keep what it drafts
            return True, True
        st = self._step
        v1 = self.cost.verify_time(1) or 0.0
        t_d = self.cost.draft or 0.0

        def v(n: int) -> float:
            return self.cost.verify_time(n) or v1 * (1 + 0.5 * (n - 1))

        a = self.acc.predict(p_top, entropy)
        p_new = st["P"] * a
        without = st["E"] / (st["D"] + v(i + 1))
        with_it = (st["E"] + p_new) / (st["D"] + v(i + 2))
        if with_it < without:
            return False, False
        st["E"] += p_new
        st["P"] = p_new
        if i + 1 >= st["k"]:
            return True, False
        optimistic = (st["E"] + p_new * a) / (st["D"] + t_d + v(i + 3))
        more = optimistic > st["E"] / (st["D"] + v(i + 2))
        if more:
            st["D"] += t_d
        return True, more

    # -- learning ------------------------------------------------------------

    def observe(self, outcome: Outcome) -> None:
        rec = outcome.record
        if outcome.source in (DraftSource.DRAFT, DraftSource.TREE) and rec.drafted:
            rate = rec.emitted / max(rec.draft_s + rec.verify_s + rec.overhead_s, 1e-9)
            key = DraftSource(outcome.source).value
            old = self.shape_rate.get(key, rate)
            self.shape_rate[key] = old + 0.2 * (rate - old)
        if outcome.source == DraftSource.TREE:
            return
        self.cost.observe_verify(rec.drafted + 1, rec.verify_s)
        if rec.drafted == 0:
            self.since_plain = 0
        if outcome.source == DraftSource.DRAFT and rec.drafted:
            self.cost.observe_draft(rec.draft_decodes, rec.catchup, rec.draft_s)
            self.acc.observe(outcome.top_probs, outcome.entropies, outcome.n_accepted)
            if self._probe and self._probe_left == 0:
                # the probe's last step: back off further if drafting still does not pay
                d_rate, _ = self._draft_rate(self.cfg.draft_max)
                v1 = self.cost.verify_time(1)
                pays = v1 is not None and d_rate > 1.0 / v1
                self.probe_every = PROBE_FIRST if pays else min(self.probe_every * 2, PROBE_MAX)
        elif outcome.source == DraftSource.LOOKUP and rec.drafted:
            self.acc.observe_lookup(outcome.lookup_match, rec.drafted, outcome.n_accepted)

    def sync_draft_at_prefill(self) -> bool:
        """Feed the prompt to the draft up front while drafting pays, or to probe.

        Probing happens at the start of a reply, when the draft has just seen the
        prompt: later in a reply, catching the draft up on everything it skipped
        would cost more than the probe can tell. A probe that finds drafting
        still does not pay doubles the number of replies until the next one.
        """
        if not self.allow_draft:
            return False
        v1 = self.cost.verify_time(1)
        self._lag = 1
        if v1 is None or self.cost.draft is None:
            self._probe_left = PROBE_STEPS
            return True
        if self._draft_rate(self.cfg.draft_max)[0] > (1.0 + MARGIN) / v1:
            return True
        if not self._could_pay(v1):
            return False  # a probe can only learn acceptance, and even 100% would lose
        self.replies_since_probe += 1
        if self.replies_since_probe >= self.probe_every:
            self.replies_since_probe = 0
            self._probe_left = PROBE_STEPS
            return True
        return False

    def _could_pay(self, v1: float) -> bool:
        """Whether some chain length would beat plain decoding were every draft token
        accepted (the measured costs alone decide: on a compute-bound target the
        draft can cost more than it could ever save, and probing it is pure loss)."""
        d = self.cost.draft or 0.0
        for k in range(1, self.cfg.draft_max + 1):
            v = self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k)
            if (k + 1) / (k * d + v) > (1.0 + MARGIN) / v1:
                return True
        return False

    def finish(self) -> None:
        self.save()

    # -- persistence ---------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        return policy_state.state_dict(self.cost, self.acc, self.shape_rate)

    def load(self, path: Path) -> None:
        """Read the saved models (a bad file is discarded: see policy_state.py)."""
        shapes = policy_state.load_into(path, self.cost, self.acc)
        if shapes is not None:
            self.shape_rate = shapes

    def save(self) -> None:
        if self.state_path is not None:
            policy_state.save(self.state_path, self.to_dict())
