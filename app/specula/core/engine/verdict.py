"""What the adaptive policy concluded about drafting, in words a header can show.

The policy's "drafting does not pay here" is a measured judgement that can be
wrong (a busy machine, a change of topic), so it is stated with its cadence of
re-checks, and a user can clear it (:meth:`Engine.clear_adaptive_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PolicyVerdict:
    """Whether adaptive drafts, and why not when it does not."""

    paused: bool  # drafting does not pay on this machine: replies run plain between re-checks
    recheck_every: int  # replies between re-checks while paused (a probe, or a one-step re-time)
    erratic: bool = False  # this session's timings were erratic: nothing of them is saved
    # The reply ended plain while the draft's first catch-up waited for it to outgrow a short
    # answer (a pair where drafting barely pays: rates.SHORT_ANSWER). Without this a reply
    # that never drafted reads as a policy that gave up, when it chose not to feed the draft.
    held_back: bool = False
    # The reply's drafting was ended by the stop-loss (policy/stop_loss.py): its draft steps
    # lost more than a small share of the reply against plain steps, so it ran plain after.
    stopped: bool = False

    def header_text(self) -> str:
        """The part after "Speculative: on" ('' while drafting runs)."""
        if not self.paused:
            return ""
        return f"paused: slower here (re-checked every {self.recheck_every} replies)"

    def tooltip(self) -> str:
        text = ("The adaptive mode measured that drafting is slower than plain decoding on this "
                f"machine, so replies run without the draft; it drafts a few steps every "
                f"{self.recheck_every} replies to check again.")
        if self.erratic:
            text += (" The timings of this session were erratic (a busy machine): they are not "
                     "saved, and the next session measures again.")
        return text
