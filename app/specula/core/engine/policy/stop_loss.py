"""The adaptive policy's stop-loss: what drafting has lost within a reply, measured on the
reply's own steps, ends the reply's drafting once it passes a small allowance.

The plan drafts where the models say a chain pays. The models can be wrong for a stretch
(a text on which the draft is confidently wrong, figures measured while the machine ran at
another speed), and while they learn, a reply can draft on at a loss: on the compute-bound
pair one reply drafted 28 steps and ran at 0.574x of plain (docs/lab/2026-12-03-pause-rules.md).
So each draft-model step is measured against what its tokens would have cost as plain
steps: its decodes, rollback and host time, less its tokens at a plain step (the target's
one-token verify and a plain step's host time, as measured). A catch-up on tokens the draft
sat out for (the prompt of a lazily fed reply) is left out: it is paid once, and the plan
weighed it before paying it.

The steps the plan chose (not a probe's: probes have their cadence and their few steps)
may lose STOP_LOSS of the reply's plain time so far plus STOP_SLACK plain steps: a pair
that pays loses a few steps in a row now and then (five rejections in a row at 50%
acceptance; a rejected chain of four costs three plain steps on an F16 target). Gains
count against losses, so a pair that pays is not stopped by a hard stretch its gains
cover. Past the allowance the policy stops drafting and holds it paused until a probe's
own steps gain (``AdaptivePolicy._stop``): the models said it paid, the steps said it did
not, and the steps are what the user waits for.

The allowance was set on the simulator (docs/lab/2026-12-03-stop-loss.md,
``specula_tools.lab.stop_loss_variants``): with 2 plain steps of slack, a new F16
pair's first rejected chain stopped replies that went on to pay, and a GPU-like pair's five
rejections in a row ended a reply that would have recovered; with 4, the replayed sessions
are as without the stop-loss and a confidently wrong reply stops after two steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from specula.core.engine.stats import StepRecord

STOP_LOSS = 0.03  # share of the reply's plain time so far that drafting may lose
STOP_SLACK = 4.0  # plain steps drafting may lose on top of it
OVERHEAD_FADE = 0.2  # weight of the newest plain step's host time in its running figure


@dataclass
class StopLoss:
    """Seconds a reply's draft-model steps lost against plain steps, and its allowance."""

    lost: float = 0.0  # this reply: planned drafted steps' seconds less their tokens at plain
    probe_lost: float = 0.0  # the same, over this reply's probe steps
    plain: float = 0.0  # this reply: its tokens so far at plain steps (seconds)
    step_plain: float = 0.0  # a plain step's seconds, as last measured
    plain_overhead: float = 0.0  # host seconds of a plain step (this session, running)
    stopped: bool = False  # this reply: its drafting was ended by the stop-loss
    stops: int = 0  # this session: replies whose drafting the stop-loss ended

    def start_reply(self) -> None:
        self.lost = self.probe_lost = self.plain = 0.0
        self.stopped = False

    def allowance(self) -> float:
        return STOP_LOSS * self.plain + STOP_SLACK * self.step_plain

    def observe(self, rec: StepRecord, model_step: bool, probe: bool, v1: float, draft_s: float) -> bool:
        """Count one step (``model_step``: the draft model proposed it; ``probe``: a probe's;
        ``v1``: the target's one-token verify; ``draft_s``: one draft decode, which stays
        with the step when a catch-up is left out). True when it takes the planned steps'
        loss past the allowance."""
        if not rec.drafted:
            self.plain_overhead += OVERHEAD_FADE * (rec.overhead_s - self.plain_overhead)
        self.step_plain = v1 + self.plain_overhead
        self.plain += rec.emitted * self.step_plain
        if not model_step or not rec.drafted:
            return False
        sunk = max(rec.catchup_s - draft_s, 0.0)  # the feed of what the draft sat out for
        loss = rec.draft_s + rec.verify_s + rec.overhead_s + rec.replay_s - sunk - rec.emitted * self.step_plain
        if probe:
            self.probe_lost += loss
            return False
        within = self.lost <= self.allowance()
        self.lost += loss
        if within and self.lost > self.allowance():
            self.stopped = True
            self.stops += 1
            return True
        return False
