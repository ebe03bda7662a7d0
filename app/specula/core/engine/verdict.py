"""What the adaptive policy concluded about drafting, in words a header can show.

The policy's "drafting does not pay here" is a measured judgement that can be
wrong (a busy machine, a change of topic), so it is stated with when it is next
re-checked, and a user can clear it (:meth:`Engine.clear_adaptive_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PolicyVerdict:
    """Whether adaptive drafts, and why not when it does not."""

    paused: bool  # drafting does not pay on this machine: replies run plain between re-checks
    # While paused: the reply that re-checks drafting (a probe, or a one-step re-time) is the
    # recheck_in-th from now (1: the next one). The wait between re-checks doubles while the
    # answer stays no (probe_cadence.py), so a fixed "every N" would be wrong most of the time.
    recheck_in: int
    erratic: bool = False  # this session's timings were erratic: nothing of them is saved
    # The reply ended plain while the draft's first catch-up waited for it to outgrow a short
    # answer (a pair where drafting barely pays: rates.SHORT_ANSWER). Without this a reply
    # that never drafted reads as a policy that gave up, when it chose not to feed the draft.
    held_back: bool = False
    # The reply's drafting was ended by the stop-loss (policy/stop_loss.py): its draft steps
    # lost more than a small share of the reply against plain steps, so it ran plain after.
    stopped: bool = False

    def _when(self) -> str:
        return "the next reply" if self.recheck_in <= 1 else f"{self.recheck_in} replies"

    def header_text(self) -> str:
        """The part after "Speculative: on" ('' while drafting runs)."""
        if not self.paused:
            return ""
        when = "next reply" if self.recheck_in <= 1 else f"in {self.recheck_in} replies"
        return f"paused: slower here (re-checked {when})"

    def tooltip(self) -> str:
        text = ("The adaptive mode measured that drafting is slower than plain decoding on this "
                "machine, so replies run without the draft. It drafts a few steps to check "
                f"again in {self._when()}; while the checks find it slower, they come less often.")
        if self.erratic:
            text += (" The timings of this session were erratic (a busy machine): they are not "
                     "saved, and the next session measures again.")
        return text
