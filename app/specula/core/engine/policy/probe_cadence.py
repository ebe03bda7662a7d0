"""When the adaptive policy probes a draft it judged not to pay, and what a probe is.

A verdict that drafting does not pay is never final. A probe (PROBE_STEPS draft steps at the
start of a reply, fed at most PROBE_WINDOW tokens of the conversation) asks again, at a
cadence that doubles from PROBE_FIRST to PROBE_MAX replies while the answer stays no. Before
a probe the pair's rate is made to weigh as PROBE_EVIDENCE tokens, since nothing fades it
while drafting is paused, and a probe outweighed by the stretch of text that paused drafting
could never find that the text has changed. Where the measured costs say no draft could pay
even at 100% acceptance, only the costs are in question: the re-check is a *re-time* (one
draft token on RETIME_WINDOW tokens of the chat) every RECHECK_EVERY replies. On a pair where
drafting would save little even at a probe's acceptance, a probe's feed waits for the reply
to outgrow a short answer (``rates.SHORT_ANSWER``). A reply whose drafting the stop-loss
ended holds drafting paused until a probe's own steps gain (:meth:`ProbeCadence._stop`).
"""

from __future__ import annotations

from specula.core.engine.policy.governor import Phase
from specula.core.engine.policy.rates import MARGIN, NEAR_TIE, SHORT_ANSWER
from specula.core.engine.policy.stop_loss import StopLoss
from specula.core.engine.policy.stop_rule import StopRule
from specula.core.engine.stats import StepRecord

RECHECK_EVERY = 8  # replies between re-checks of a draft judged not to pay, at the most
PROBE_FIRST, PROBE_MAX = 2, RECHECK_EVERY  # replies between probes of a draft that does not pay (doubling)
PROBE_STEPS = 3  # draft steps a probe makes
PROBE_EVIDENCE = 12.0  # draft tokens the pair's rate weighs as when a paused draft is probed
PROBE_RATE = 0.9  # the acceptance a probe's draft length is chosen for (it asks: could it pay?)
# A probe feeds the draft at most this many tokens of the conversation past what it holds
# (DraftModel.begin skips the stretch before them for the reply): in a long chat with a
# paused draft a probe would otherwise catch it up on everything said since it last drafted
# (thousands of tokens: seconds on a CPU), to ask a question a window answers.
PROBE_WINDOW = 256
RETIME_WINDOW = 4  # tokens a re-time feeds the draft (it times a decode; its proposal is unjudged)


class ProbeCadence(StopRule):
    """The probes of the adaptive policy (its base, under its planning and learning)."""

    stop_loss: StopLoss
    _fresh: bool  # the draft has not been fed this reply's prompt yet
    _short_plain: int  # replies in a row that ended before a held-back catch-up was paid

    def _init_cadence(self) -> None:
        self.probe_every = PROBE_FIRST
        self.replies_since_probe = 0
        self._probe_left = 0  # draft steps this reply's probe has still to make
        self._retime = False  # this reply re-times the costs: one draft step, then none
        self._sync_wait = 0  # reply tokens before this reply's probe feeds the draft (sync_after)
        self.probe_ran = False  # a probe step was planned this reply

    def _probe_now(self, v1: float | None) -> bool:
        """At a reply's start: whether this reply probes (the draft is fed the prompt for it),
        and whether drafting is paused. A probe that waited for its reply to outgrow a short
        answer, in a reply that did not, runs in this reply instead, as it was planned."""
        owed = self._owed()
        self.probe_ran = False
        if owed:
            return True
        self._retime = False
        self._sync_wait = 0
        if self.cost.stale:
            # the machine is faster than the figures the session started from, and their
            # multi-token verifies and draft decode are not re-measured yet (cost_model.
            # _rescale): the judgement they made goes with them, and a probe re-measures
            self.cost.remeasure()
            self.cost.stale = False
            self.governor.on("clear")
        if v1 is None or self._unmeasured():
            self.governor.on("explore")
            self.replies_since_probe = 0
            self._probe_left = PROBE_STEPS
            return True
        if not self.governor.held and self.draft_pays_rate(self.cfg.draft_max) > (1.0 + MARGIN) / v1:
            self.governor.on("pays")
            if self._short_plain >= self.probe_every:
                # short answers have run plain while the catch-up waited, so nothing was
                # learnt: probe at the usual cadence (a pair that really pays then drafts
                # from the start again, since it repays its catch-up within a short answer)
                self._short_plain = 0
                self.replies_since_probe = 0
                self._probe_left = PROBE_STEPS
                self._sync_wait = SHORT_ANSWER if self._probe_waits(v1) else 0
                return True
            self._fresh = True  # drafting pays: the plan catches the draft up when it drafts
            return False
        self.governor.on("loses")
        self.replies_since_probe += 1
        # Where even 100% acceptance would lose, only the costs are in question: a re-time
        # (one step on a short window) every RECHECK_EVERY replies (the machine may have been
        # busy when they were measured), at the usual cadence while this session's timings
        # are erratic.
        could_pay = self.could_pay(v1)
        if self.replies_since_probe >= self._every(could_pay):
            self.replies_since_probe = 0
            self._sync_wait = SHORT_ANSWER if self._probe_waits(v1) else 0
            if not could_pay:
                self.cost.remeasure()  # the re-time's timings replace the ones that said "never"
                self._retime = True
                self._probe_left = 1
                return True
            self._probe_left = PROBE_STEPS
            self.acc.shrink(PROBE_EVIDENCE)
            return True
        return False

    @property
    def probe_steps_left(self) -> int:
        """Draft steps this reply's probe has still to make (0: none, or it has made them)."""
        return self._probe_left

    @property
    def probe_step(self) -> bool:
        """The step planned last is a probe's (it measures: kept whole, judged apart)."""
        return self._probe

    @property
    def retiming(self) -> bool:
        """This reply re-times the costs (one draft step on a short window)."""
        return self._retime

    def replies_to_recheck(self) -> int:
        """While paused, which reply from now re-checks drafting (1: the next one), by the
        count :meth:`_probe_now` keeps: a probe at the cadence, or a re-time every
        RECHECK_EVERY replies where no chain could pay (the cadence while timings are
        erratic). A probe owed by a reply that ended as a short answer runs in the next."""
        v1 = self.cost.verify_time(1)
        if self._owed() or v1 is None or self._unmeasured():
            return 1
        return max(self._every(self.could_pay(v1)) - self.replies_since_probe, 1)

    def _owed(self) -> bool:
        """A probe that waited for its reply to outgrow a short answer, in a reply that did
        not: it runs in the next reply."""
        return self._probe_left > 0 and self._sync_wait > 0 and not self.probe_ran

    def _unmeasured(self) -> bool:
        """The next reply probes whatever the rates say: no draft decode timed yet, or the
        user asked (``AdaptivePolicy.clear_verdict``)."""
        return self.cost.draft is None or self.governor.phase is Phase.EXPLORING

    def _every(self, could_pay: bool) -> int:
        """Replies between re-checks now: the probe cadence, or where no chain could pay even
        at 100% acceptance a re-time every RECHECK_EVERY (the cadence while timings are erratic)."""
        return self.probe_every if could_pay or self.cost.erratic else RECHECK_EVERY

    def _probe_waits(self, v1: float) -> bool:
        """Whether a probe's feed waits for the reply to outgrow a short answer: where even
        at the acceptance a probe is sized for (PROBE_RATE) a drafted token would save less
        than NEAR_TIE of a plain step, as on the compute-bound pair (a re-time: no chain
        could pay at all). Where drafting could gain much (an F16 target), a probe that
        waits gives up the reply's first SHORT_ANSWER tokens of drafting."""
        rate, _ = self.draft_rate(self.cfg.draft_max, a=PROBE_RATE, fed=True)
        return rate <= 0.0 or v1 - 1.0 / rate < NEAR_TIE * v1

    def sync_window(self) -> int | None:
        """Every sync at prefill is a probe (PROBE_STEPS draft steps), bounded by PROBE_WINDOW,
        or a re-time (one step), bounded by RETIME_WINDOW."""
        return RETIME_WINDOW if self._retime else PROBE_WINDOW

    def sync_after(self) -> int:
        """A probe where drafting would save little even at a probe's acceptance
        (:meth:`_probe_waits`: a re-time, or a probe on the compute-bound pair) feeds the
        draft once the reply has SHORT_ANSWER tokens: a short answer cannot repay that
        catch-up (a probe that met an 18-token answer ran at 0.82x of plain on the
        simulated compute-bound pair), and the probe then runs in the next reply instead.
        Any other probe, a new pair's first or one the user asked for
        (``AdaptivePolicy.clear_verdict``), feeds it after the first token."""
        return self._sync_wait

    def _probe_k(self, k_max: int) -> int:
        """A probe's draft length: the best one were acceptance high (a two-token probe
        asks the wrong question where a short verify batch costs as much as a long one);
        a re-time's, one token (one draft decode, the cheapest step that times it)."""
        if self._retime:
            return 1
        _, k = self.draft_rate(k_max, a=max(self.acc.token_rate, PROBE_RATE))
        return k or min(2, k_max)

    def _probe_ended(self) -> None:
        """The probe's last step: back off further if drafting still does not pay. Held by
        the stop-loss, the probe's own steps decide (they must have gained)."""
        d_rate = self.draft_pays_rate(self.cfg.draft_max)
        v1 = self.cost.verify_time(1)
        pays = v1 is not None and d_rate > 1.0 / v1
        if self.governor.held:
            gained = self.stop_loss.probe_lost < 0.0
            self.governor.on("probe gained" if gained else "probe lost")
            pays = pays and gained
        self.governor.on("probe pays" if pays else "probe loses")
        self.probe_every = PROBE_FIRST if pays else min(self.probe_every * 2, PROBE_MAX)

    def _stop(self) -> None:
        """This reply's drafting lost more than its stop-loss allows (``stop_loss.py``): it
        drafts no more, and drafting is held paused whatever the rates say until a probe's
        own steps gain (the rates said it paid and the steps did not: only steps lift it),
        probed at the cadence (a probe that loses backs it off as any other). Probing in
        the very next reply instead cost the replayed compute-bound sessions a probe on a
        short answer (0.83x), and backing off first cost the F16 ones held replies on
        easier text (docs/lab/2026-12-03-stop-loss.md)."""
        self.governor.on("stop")
        self.replies_since_probe = 0

    def _observe_retime(self, rec: StepRecord) -> None:
        """A re-time's step: its costs are this session's figures; what it accepted is not
        learnt (a draft that read RETIME_WINDOW tokens agrees less than one that read the
        conversation, docs/lab/data/2026-12-03-probe-window/window-agreement.txt). Where a chain could now
        pay, the next reply takes the draft up again: it drafts where the pair's rate says
        drafting pays, else it probes (the cadence's count is made due)."""
        self.cost.observe_verify(rec.drafted + 1, rec.verify_s)
        self.cost.observe_draft(rec.draft_decodes, rec.catchup, rec.draft_s)
        self._observe_rollback(rec)
        v1 = self.cost.verify_time(1)
        if v1 is not None and self.could_pay(v1):
            self.replies_since_probe = self.probe_every  # the next sync reaches the cadence

    def _observe_rollback(self, rec: StepRecord) -> None:
        """A drafted step's cost of keeping a recurrent or hybrid target exact."""
        self.cost.observe_rollback(rec.checkpoint_s + rec.replay_s)
