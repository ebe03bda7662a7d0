"""How to speculate: the user-facing knobs (LM Studio's draft settings and more)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum


class Mode(str, Enum):
    PLAIN = "plain"  # no drafting: one target token per step
    CHAIN = "chain"  # the draft model proposes a chain of draft_max tokens
    ADAPTIVE = "adaptive"  # a cost model picks the draft length per step (may pick 0)
    TREE = "tree"  # the draft proposes a token tree, verified in one decode
    LOOKUP = "lookup"  # n-gram prompt lookup, no draft model needed
    MTP = "mtp"  # the target's own MTP (NextN) layers draft a chain, no draft model needed
    EAGLE3 = "eagle3"  # a loaded EAGLE-3 head drafts a chain from the target's hidden states
    DFLASH = "dflash"  # a loaded DFlash head drafts a block in one decode
    DSPARK = "dspark"  # a loaded DSpark head (DFlash with a Markov head)


DEFAULT_MODE = Mode.ADAPTIVE  # the one default of core, CLI, server and GUI: drafts only where it pays
# The default "Max draft": a fixed chain's length, and the cap under which the adaptive policy
# picks its own. A cap that binds costs adaptive its best shape where verifying is cheap
# (F16 code here: 1.22x of plain with a cap of 4, 1.33x with 7,
# docs/lab/2026-12-01-adaptive-convergence.md, "Max draft 8"; on a
# GPU the verify curve stays flat for longer still), and the load-time calibration
# measures every length up to it.
DEFAULT_DRAFT_MAX = 8


@dataclass
class SpecConfig:
    """Speculative settings for one reply.

    ``draft_max``/``draft_min``/``p_min`` mirror LM Studio's "Max Draft Size",
    "Min Draft Size" and "Drafting Probability Cutoff": a draft shorter than
    ``draft_min`` is discarded, and drafting stops when the draft's top
    probability falls below ``p_min``.
    """

    mode: Mode = DEFAULT_MODE
    draft_max: int = DEFAULT_DRAFT_MAX
    draft_min: int = 0
    p_min: float = 0.0
    tree_budget: int = 12  # nodes in a token tree
    tree_width: int = 2  # children kept per node
    # False (default): the first token is the target's own, shown before the draft catches
    # up on the prompt (TTFT as plain's). True: the draft is fed the prompt during prefill
    # and drafts from the first position (the exactness tests study that position).
    draft_first_token: bool = False
    # Relaxed (lossy) acceptance: off by default.
    relaxed_top_k: int = 0  # accept a draft token within the target's top-k
    relaxed_ratio: float = 0.0  # or when p_target / p_draft exceeds this

    @property
    def lossy(self) -> bool:
        return self.relaxed_top_k > 0 or self.relaxed_ratio > 0

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["mode"] = self.mode.value
        return d


def mtp_refusal(target: str) -> str:
    """Why mode ``mtp`` cannot run on ``target`` (a name or path), in the one wording every
    surface uses (`specula chat --mode` and `/mode`, `specula serve`, the server's
    ``"specula": {"mode"}``, `specula bench`): without MTP layers the mode would draft
    nothing and run plain unsaid, so it is refused instead."""
    return (f"{target} has no MTP (NextN) layers this llama.cpp can run: mode mtp needs a "
            "target such as Qwen3.5 / Qwen3.6 or Qwen3-Next with them")
