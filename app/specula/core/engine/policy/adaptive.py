"""The adaptive policy: draft what pays on this machine, for this pair, right now.

Each step it maximises expected *tokens per second* (not tokens per step:
SpecKV's per-step objective rewards long drafts that cost more than they
save), from two models kept per (target, draft, machine) and saved between
sessions (``policy/state.py``), so a second session starts at the right shape:

* the cost model (``cost_model.py``): the target's verify time for each batch
  size, the draft's time per decode and per token of catch-up; a new pair's is
  measured at draft load (``loop/calibration.py``);
* the acceptance model (``acceptance_model.py``): the pair's per-token rate,
  which chooses between drafting and plain decoding, and the acceptance given
  the draft's confidence, which cuts a chain at a token not worth its cost.

A step is plain (k = 0), a draft-model chain, a token tree, or a prompt-lookup chain.
Nothing is tried that the measured costs say cannot pay: a draft that would lose at 100%
acceptance is never probed, a tree is tried only where its best case beats the chain's
measured rate (and used only while its own measured rate does), and a new lookup match
length only where it would pay were it right. When plain wins, the draft is still probed
now and then (exponential back-off over replies) so that a change of regime is noticed
(``probe_cadence.py``: when, how long, on how much of the chat). The draft is fed the
conversation only when the plan first drafts, and that catch-up is weighed like any
other cost: where lookup serves an edit of a long conversation, the draft's prefill is
never paid, and on a pair where drafting barely pays a short answer never pays it
(``rates.SHORT_ANSWER``).

A verdict that drafting does not pay is never final: it is re-checked at least
every RECHECK_EVERY replies (``probe_cadence.py``), it is not trusted from erratic
timings, and the costs of a session whose timings were erratic are never saved
(``cost_model.py``), so a busy afternoon does not switch drafting off for good.
:meth:`AdaptivePolicy.verdict` states the verdict; :meth:`clear_verdict` forgets it.
The stop rule within a step is ``stop_rule.py``. The stop-loss (``stop_loss.py``) ends a
reply's drafting once its steps have lost more than a small allowance against plain steps,
whatever the models say, and holds drafting paused until a probe's own steps gain.
"""

from __future__ import annotations

import copy
from pathlib import Path

from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters.proposal import long_copy
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy import state as policy_state
from specula.core.engine.policy.acceptance_model import AcceptanceModel
from specula.core.engine.policy.cost_model import MEASURED, SHORT_FEED, CostModel, Seeder
from specula.core.engine.policy.fixed import Outcome, Plan, PlanInput
from specula.core.engine.policy.governor import Governor, Phase
from specula.core.engine.policy.hindsight import Hindsight
from specula.core.engine.policy.planner import Option, choose, expected_tokens
from specula.core.engine.policy.probe_cadence import (
    PROBE_FIRST,
    PROBE_RATE,
    PROBE_STEPS,
    RECHECK_EVERY,
    ProbeCadence,
)
from specula.core.engine.policy.rates import COULD_PAY_MARGIN, MARGIN
from specula.core.engine.policy.shapes import ShapeRates
from specula.core.engine.policy.stop_loss import StopLoss
from specula.core.engine.verdict import PolicyVerdict

__all__ = ["MARGIN", "PROBE_STEPS", "RECHECK_EVERY", "AcceptanceModel", "AdaptivePolicy", "CostModel",
           "expected_tokens"]

REFRESH_PLAIN = 128  # steps between plain steps that re-measure one-token decodes
EXPLORE_SHARE = 0.05  # in a plain stretch, a draft probe may cost this share of its time
# The share of steps prompt lookup serves (an edit that repeats the conversation: most),
# followed over the session (COVER_FADE per step); a new session assumes COVER_PRIOR. A
# one-time catch-up of the draft pays only over the steps it would then draft.
COVER_PRIOR, COVER_FADE = 0.0, 0.1
# Before a long one-time catch-up (more than SHORT_FEED tokens: the draft fed the
# conversation, or what lookup and plain steps emitted) plain steps run until what they lost against drafting reaches WAIT_SHARE
# of its cost (ski rental): lookup may take over meanwhile, and then nothing is paid.
WAIT_SHARE = 0.1
# Probes of lookup match lengths not judged yet are paid from a budget: what they lost
# against plain decoding (their step time less a plain step per token they yielded) may
# reach LOOKUP_EXPLORE of the session's step time, plus half a plain step to start with.
# A copy that pays earns its probes back; where lookup proposes badly (fresh code, the
# n-gram cache guessing) it loses its turn after a probe or two instead of one probe per
# match length (the first reply of a compute-bound pair ran at 0.76x of plain that way).
LOOKUP_EXPLORE = 0.01


class AdaptivePolicy(ProbeCadence):
    name = "adaptive"
    reads_confidence = True  # its stop rule and acceptance model are built on it

    def __init__(self, cfg: SpecConfig, state_path: Path | None = None, *,
                 allow_draft: bool = True, calibration: Seeder | None = None) -> None:
        self.cfg = cfg
        self.allow_draft = allow_draft
        # the drafter's timing at load: what a new pair (and a Re-check) starts from
        self.calibration = calibration
        # the drafters it plans with (MTP is the target's own head: mtp_choice.py puts it
        # in the draft's place; the n-gram cache answers through lookup)
        self.wants = frozenset({TokenOrigin.CHAIN, TokenOrigin.TREE, TokenOrigin.LOOKUP})
        if not allow_draft:
            self.name = "lookup"  # prompt lookup alone, with the same cost model
            self.wants = frozenset({TokenOrigin.LOOKUP})
        self.cost = CostModel()
        self.acc = AcceptanceModel()
        self.state_path = state_path
        self.governor = Governor()  # the judgement between replies (governor.py)
        self._init_cadence()  # probe_cadence.py: when a paused draft is probed again
        self.since_plain = 0
        self._lag = 1  # tokens the draft must be fed before it can draft
        self._room = 1  # tokens the reply may still draft (the plan's room)
        self._probe = False
        self._plain_streak = 0  # plain steps in a row in this reply
        self.lookup_cover = COVER_PRIOR  # share of recent steps lookup served
        self._waited = 0.0  # seconds plain steps lost while a catch-up waited
        self._fresh = False  # the draft has not been fed this reply's prompt yet
        self._reply_tokens = 0  # tokens this reply has emitted
        self._late_seen = False  # this reply's first catch-up waited (rates.SHORT_ANSWER)
        self._short_plain = 0  # replies in a row that ended before that catch-up was paid
        self.shapes = ShapeRates()  # measured tokens/s of draft-model steps by shape (shapes.py)
        self._step: dict[str, float] = {}
        self.hindsight = Hindsight()  # what each chain length would have had on recent steps
        self._lookup_loss = 0.0  # seconds lookup probes lost against plain this session
        self._spent = 0.0  # seconds of every step this session
        self.stop_loss = StopLoss()  # what this reply's drafting has lost (stop_loss.py)
        self._planned = False  # the step observed next is one this policy planned
        if state_path is not None:
            self.load(state_path)
        # What was saved before this session: kept on disk if this session's timings are erratic.
        self._saved_cost = copy.deepcopy(self.cost)
        self._saved_shapes = dict(self.shape_rate)
        # a pair with no saved state (never saved for it alone), or whose saved figures this
        # load found taken on a slower machine: the judgement they made goes with them
        if calibration is not None and calibration.seed(self.cost) and self.governor.phase is not Phase.DRAFTING:
            self.governor.on("clear")

    # -- planning ------------------------------------------------------------

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
            return self._decide(Plan(TokenOrigin.TARGET, 0))
        plain = 1.0 / v1
        l_rate, l_k = self.lookup_rate(inp, k_max)
        d_rate = 0.0
        may_draft = self._may_draft(inp)
        if may_draft and (not self._retime or self._probe_left > 0):
            in_sync = inp.draft_lag <= 2
            if in_sync and (self.cost.draft is None or self._probe_left > 0):
                self._probe_left = max(self._probe_left - 1, 0)
                self.probe_ran = True
                return self._decide(Plan(TokenOrigin.CHAIN, self._probe_k(k_max)), probe=True)
            if self._probe_left > 0 and self._sync_wait and not self.probe_ran:
                return self._decide(Plan(TokenOrigin.TARGET, 0))  # the probe's feed waits
            d_rate = self.draft_pays_rate(k_max)
            k_new = self.unmeasured_k(k_max)
            if in_sync and k_new and d_rate > 0.6 * plain:
                return self._decide(Plan(TokenOrigin.CHAIN, k_new), probe=True)
        if self._lookup_untried(inp) and self._lookup_budget(v1):
            # a match length not judged yet: probe it where it would pay clearly were it
            # right (on a flat verify curve several tokens; where each verified token costs
            # a good part of a step, a probe that could gain 1% is a likely loss of 10%);
            # while the draft is in sync and pays, only a long copy (a match that agrees
            # with the text before it for 8+ tokens) is worth a probe: a short match in
            # fresh code is mostly a coincidence, and a rejected probe costs a draft step
            # (a short match or the n-gram cache's guess is probed with at most two tokens:
            # it asks whether the first is right, and a long proposal of a guess mostly
            # pays a long verify for one token)
            cap = k_max if long_copy(inp.lookup_match) else min(k_max, 2)
            o_rate, o_k = self.lookup_rate(inp, cap, a=PROBE_RATE)
            draft_pays = inp.draft_lag <= 2 and d_rate > plain * (1.0 + MARGIN)
            if (o_rate > max(plain * (1.0 + COULD_PAY_MARGIN), d_rate)
                    and (not draft_pays or long_copy(inp.lookup_match))):
                return self._decide(Plan(TokenOrigin.LOOKUP, o_k, inp.lookup_tokens[:o_k]), probe=True)
        best = choose(v1, [Option(TokenOrigin.CHAIN, 0, d_rate), Option(TokenOrigin.LOOKUP, l_k, l_rate)], MARGIN)
        if best.source is TokenOrigin.LOOKUP:
            return self._decide(Plan(TokenOrigin.LOOKUP, l_k, inp.lookup_tokens[:l_k]))
        if best.source is TokenOrigin.CHAIN:  # its length: the hindsight cap, cut by the stop rule
            if self._late(inp.draft_lag):  # a short answer would not repay the catch-up
                self._late_seen = True
                return self._decide(Plan(TokenOrigin.TARGET, 0))
            once = self._once(inp.draft_lag)
            if inp.draft_lag > SHORT_FEED and self._waited < WAIT_SHARE * once:
                self._waited += v1 - 1.0 / d_rate  # this plain step's loss per token
                return self._decide(Plan(TokenOrigin.TARGET, 0))
            self._waited = 0.0
            return self._decide(self._shape(inp, k_max, plain))
        if may_draft and not self._retime:
            if self._late(inp.draft_lag):
                self._late_seen = True
            else:
                self._plain_streak += 1  # plain steps in a row that could have explored
                if self._explore_pays(inp, k_max, v1):
                    return self._decide(Plan(TokenOrigin.CHAIN, k_max))
        return self._decide(Plan(TokenOrigin.TARGET, 0))

    def _may_draft(self, inp: PlanInput) -> bool:
        """Whether the draft model may propose now: not while the stop-loss holds drafting
        paused, but for a probe (:meth:`_stop`)."""
        return inp.has_draft and self.allow_draft and (not self.governor.held or self._probe_left > 0)

    def _explore_pays(self, inp: PlanInput, k_max: int, v1: float) -> bool:
        """In a plain stretch: one draft step, once what it is expected to lose against plain
        decoding (its time, the catch-up included, less the plain time of the tokens it is
        expected to yield) fits EXPLORE_SHARE of the plain time since drafting last ran.
        A few unlucky steps must not end drafting for the reply where probing is cheap
        (a fast draft, a flat verify curve); the whole catch-up counts, so where catching
        up costs more than EXPLORE_SHARE of a plain step per token skipped this never
        fires, and the back-off over replies decides."""
        if not self.could_pay(v1):
            return False
        _, k = self.draft_rate(k_max)
        if k == 0:
            return False
        e = self.acc.expected(k)
        step = (self.cost.catchup_time(inp.draft_lag) + k * (self.cost.draft or 0.0) + self.verify_s(k + 1)
                + self._rollback())
        loss = step - e * v1
        return loss <= EXPLORE_SHARE * self._plain_streak * v1

    def _late(self, lag: int) -> bool:
        """Whether the reply's first catch-up waits for the reply to outgrow a short answer
        (``rates.SHORT_ANSWER``); the plan notes it (``_late_seen``), so that a run of short
        answers that never drafted is followed by a probe (:meth:`sync_draft_at_prefill`)."""
        return self._first_catchup(lag) == "late"  # never once the draft was fed

    def _ended_short(self) -> bool:
        """Whether the reply (the last one, between replies) ended before its first
        catch-up, held back for a short answer's length, was paid."""
        return self._late_seen and self._fresh

    def unmeasured_k(self, k_max: int) -> int:
        """A draft length whose verify batch has not been timed enough yet (0: none).

        Verify time can jump between batch sizes, so each length up to the maximum
        is measured a few times before the model is trusted (once per pair and
        machine: the calibration at load does it, and the measurements are saved).
        """
        for k in range(1, k_max + 1):
            if self.cost.verify_n.get(k + 1, 0) < MEASURED:
                return k
        return 0

    def _shape(self, inp: PlanInput, k_max: int, plain: float) -> Plan:
        """Chain or tree (``shapes.py``): a tree only while its measured rate beats the
        chain's and plain decoding's, tried only where its best case could beat them."""
        chain = Plan(TokenOrigin.CHAIN, self.hindsight_cap(k_max))
        if self.cfg.tree_budget <= 1 or TokenOrigin.TREE not in inp.available:
            return chain
        if self.shapes.choose_tree(plain, MARGIN, lambda: self._tree_best_case(k_max)):
            return Plan(TokenOrigin.TREE, self.cfg.tree_budget)
        return chain

    @property
    def shape_rate(self) -> dict[str, float]:
        """Measured tokens/s of draft-model steps by shape (``TokenOrigin`` values)."""
        return self.shapes.rate

    @shape_rate.setter
    def shape_rate(self, rates: dict[str, float]) -> None:
        self.shapes.rate = rates

    @property
    def draft_steps(self) -> int:
        """Draft-model steps planned this session (trees wait for the chain to run a while)."""
        return self.shapes.draft_steps

    @draft_steps.setter
    def draft_steps(self, n: int) -> None:
        self.shapes.draft_steps = n

    def hindsight_cap(self, k_max: int) -> int:
        """At most one token past the chain length that would have done best over the
        recent draft steps (``hindsight.py``; k_max until a step has been seen)."""
        return self.hindsight.cap(k_max)

    def _lookup_budget(self, v1: float) -> bool:
        """Whether lookup probes have lost less than their share of the session's time."""
        return self._lookup_loss <= LOOKUP_EXPLORE * self._spent + 0.5 * v1

    def _lookup_untried(self, inp: PlanInput) -> bool:
        """A match of 3+ tokens whose length has been judged fewer than 4 times."""
        return (
            bool(inp.lookup_tokens) and inp.lookup_match >= 3
            and self.acc.lookup_tot.get(inp.lookup_match, 0.0) < 4
        )

    def _decide(self, plan: Plan, probe: bool = False) -> Plan:
        self._probe = probe
        self._planned = True
        served = 1.0 if plan.source == TokenOrigin.LOOKUP else 0.0
        self.lookup_cover += COVER_FADE * (served - self.lookup_cover)
        if plan.source != TokenOrigin.TARGET:
            self._plain_streak = 0
        if plan.source == TokenOrigin.CHAIN:
            self._fresh = False
            t_d = self.cost.draft or 0.0
            self._step = {"E": 1.0, "P": 1.0, "k": float(plan.k),
                          "D": self.cost.catchup_time(self._lag) + t_d + self._rollback()}
        return plan

    # -- learning ------------------------------------------------------------

    def observe(self, outcome: Outcome) -> None:
        self._learn(outcome)
        v1 = self.cost.verify_time(1)
        # the stop-loss judges the steps this policy planned (not figures fed in to train it)
        model_step = (self._planned and not self._retime
                      and outcome.source in (TokenOrigin.CHAIN, TokenOrigin.TREE))
        self._planned = False
        if v1 is not None and self.stop_loss.observe(outcome.record, model_step, self._probe, v1,
                                                     self.cost.draft or 0.0):
            self._stop()

    def _learn(self, outcome: Outcome) -> None:
        rec = outcome.record
        self._spent += rec.draft_s + rec.verify_s + rec.overhead_s
        self._reply_tokens += rec.emitted
        v1 = self.cost.verify_time(1)
        if outcome.source == TokenOrigin.LOOKUP and self._probe and v1 is not None:
            self._lookup_loss += rec.draft_s + rec.verify_s + rec.overhead_s - rec.emitted * v1
        if self._retime and outcome.source == TokenOrigin.CHAIN and rec.drafted:
            self._observe_retime(rec)
            return
        if outcome.source in (TokenOrigin.CHAIN, TokenOrigin.TREE) and rec.drafted:
            rate = rec.emitted / max(rec.draft_s + rec.verify_s + rec.overhead_s + rec.replay_s, 1e-9)
            key = TokenOrigin(outcome.source).value
            self._observe_shape(key, rate)
        if rec.drafted:
            self._observe_rollback(rec)
        if outcome.source == TokenOrigin.TREE:
            if rec.drafted and outcome.chain_run >= 0:
                chain = self._chain_in_place(rec, outcome.chain_run, outcome.chain_depth)
                self.shapes.observe_pair(rate, chain)
                self._observe_shape(TokenOrigin.CHAIN.value, chain)
            return
        self.cost.observe_verify(rec.drafted + 1, rec.verify_s)
        if rec.drafted == 0:
            self.since_plain = 0
        if outcome.source == TokenOrigin.CHAIN and rec.drafted:
            self.cost.observe_draft(rec.draft_decodes, rec.catchup, rec.draft_s)
            self.hindsight.observe(rec.drafted, outcome.n_accepted, self.cost.draft or 0.0, self.verify_s)
            self.acc.observe(outcome.top_probs, outcome.entropies, outcome.n_accepted)
            if self._probe and self._probe_left == 0:
                self._probe_ended()
        elif outcome.source == TokenOrigin.LOOKUP and rec.drafted:
            self.acc.observe_lookup(outcome.lookup_match, rec.drafted, outcome.n_accepted)

    def _observe_shape(self, key: str, rate: float) -> None:
        """One draft-model step's rate (``shapes.py``: the median of its recent steps)."""
        self.shapes.observe(key, rate)

    def sync_draft_at_prefill(self) -> bool:
        """Feed the prompt to the draft for this reply only to probe it
        (:meth:`ProbeCadence._probe_now`).

        While drafting pays, the draft is not fed at prefill: the first draft step the
        plan chooses catches it up (the same batched feed, after the first token as
        before), and the plan weighs that catch-up against lookup and plain steps
        (paid as exploration when short, see rates.SUNK_SHARE), so a long conversation that
        lookup copies from does not pay the draft's prefill (1.5 s for 600 tokens
        with the 0.5B draft on one core, a quarter of a 64-token reply). Probing happens at
        the start of a reply, when the draft has just seen the prompt (on a pair where
        drafting saves little, once the reply has outgrown a short answer:
        :meth:`sync_after`): later in a reply, catching the draft up on everything it
        skipped would cost more than the probe can tell.
        """
        self.stop_loss.start_reply()
        if not self.allow_draft:
            return False
        self._short_plain = self._short_plain + 1 if self._ended_short() else 0
        self._late_seen = False
        self._lag = 1
        self._plain_streak = 0
        self._reply_tokens = 0
        self._waited = 0.0
        self._fresh = False
        return self._probe_now(self.cost.verify_time(1))

    def finish(self) -> None:
        self.save()

    # -- the verdict ---------------------------------------------------------

    def verdict(self) -> PolicyVerdict | None:
        """Whether the last reply found drafting paying, and when a pause is re-checked
        (None for lookup alone: it has no drafter to judge)."""
        if not self.allow_draft:
            return None
        return PolicyVerdict(paused=self.governor.paused, recheck_in=self.replies_to_recheck(),
                             erratic=self.cost.erratic,
                             held_back=self.allow_draft and self._ended_short(),
                             stopped=self.allow_draft and self.stop_loss.stopped)

    def clear(self) -> None:
        """The user's Re-check: :meth:`clear_verdict` from the calibration at load."""
        self.clear_verdict(self.calibration)

    def clear_verdict(self, calibration: Seeder | None = None) -> None:
        """Forget the measured costs (the user asked, or they are known to be stale): start
        again from ``calibration`` (the pair's timing at load) and probe on the next reply;
        what was learnt about acceptance stays. Saved at once."""
        self.cost = CostModel()
        if calibration is not None:
            calibration.seed(self.cost)
        self.shapes.forget()
        self._saved_cost, self._saved_shapes = copy.deepcopy(self.cost), {}
        self.governor.on("clear")
        self.probe_every = PROBE_FIRST
        self.replies_since_probe = 0
        self.save()

    # -- persistence ---------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """What is saved: the acceptance model always; the costs and shape rates of this
        session only when its timings were not erratic (else what was saved before)."""
        if self.cost.erratic:
            return policy_state.state_dict(self._saved_cost, self.acc, self._saved_shapes)
        return {**policy_state.state_dict(self.cost, self.acc, self.shape_rate),
                "phase": self.governor.phase.value}

    def load(self, path: Path) -> None:
        """Read the saved models (a bad file is discarded: see policy/state.py)."""
        loaded = policy_state.load_into(path, self.cost, self.acc)
        if loaded is not None:
            self.shape_rate, phase = loaded
            if phase in {p.value for p in Phase}:
                self.governor.phase = Phase(phase)
                self.governor.on("new session")

    def save(self) -> None:
        if self.state_path is not None:
            policy_state.save(self.state_path, self.to_dict())
