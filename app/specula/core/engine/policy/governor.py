"""The adaptive policy's judgement between replies, as one explicit state machine.

Whether a drafter pays is judged at each reply's start from the models, at each probe's
end from the probe's steps, and within a reply by the stop-loss; the user can ask for a
re-check. Each of those is an *event*, and :data:`TRANSITIONS` says where it leads from
each :class:`Phase` (docs/engine.md, "The adaptive governor", draws it). The verdict a
header shows (``paused``, and with the stop-loss's hold) is read from the phase alone,
and the phase is saved with the pair's models (not from a session whose timings were
erratic: those never outlive it).
"""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    DRAFTING = "drafting"  # the models say drafting pays (or nothing is measured yet)
    EXPLORING = "exploring"  # the next reply probes whatever the costs say (the Re-check)
    PAUSED = "paused"  # drafting does not pay: plain replies, a probe or a re-time at the cadence
    HELD = "held"  # the stop-loss ended a reply's drafting: paused until a probe's steps gain


# (phase, event) -> next phase. Events: at a reply's start "pays" / "loses" (the models'
# judgement; a hold is not judged by them: "loses"), "explore" (the re-check's probe
# starts); at a probe's end "probe pays" / "probe loses", and under a hold first "probe
# gained" / "probe lost" (its own steps against plain ones); "stop" (the stop-loss);
# "clear" (the user's Re-check); "new session" (the saved phase read back: a hold was
# about the text of the session that lost, the models judge the next one).
TRANSITIONS: dict[tuple[Phase, str], Phase] = {
    **{(p, "clear"): Phase.EXPLORING for p in Phase},
    **{(p, "stop"): Phase.HELD for p in Phase},
    **{(p, "explore"): Phase.DRAFTING for p in (Phase.EXPLORING, Phase.DRAFTING)},
    **{(p, "pays"): Phase.DRAFTING for p in (Phase.DRAFTING, Phase.PAUSED)},
    **{(p, "loses"): Phase.PAUSED for p in (Phase.DRAFTING, Phase.PAUSED)},
    (Phase.HELD, "loses"): Phase.HELD,
    **{(p, "probe pays"): Phase.DRAFTING for p in (Phase.DRAFTING, Phase.PAUSED)},
    **{(p, "probe loses"): p for p in (Phase.DRAFTING, Phase.PAUSED)},
    (Phase.HELD, "probe gained"): Phase.PAUSED,
    (Phase.HELD, "probe lost"): Phase.HELD,
    (Phase.HELD, "new session"): Phase.PAUSED,
}


class Governor:
    """The phase, moved only by :meth:`on` through :data:`TRANSITIONS`."""

    def __init__(self, phase: Phase = Phase.DRAFTING) -> None:
        self.phase = phase

    def on(self, event: str) -> Phase:
        """Take ``event``; an event the table has no row for in this phase changes nothing
        (a probe's end in a phase that did not probe, say)."""
        self.phase = TRANSITIONS.get((self.phase, event), self.phase)
        return self.phase

    @property
    def paused(self) -> bool:
        """Drafting does not pay here now (what the header says)."""
        return self.phase in (Phase.PAUSED, Phase.HELD)

    @property
    def held(self) -> bool:
        return self.phase is Phase.HELD
