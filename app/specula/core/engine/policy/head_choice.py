"""The policy of the draft-head modes (``eagle3``, ``dflash``, ``dspark``): a fixed chain
from the loaded head, as mode ``chain`` is from a draft model and ``mtp`` from the target's
own layers. It only chooses how much to draft: the reply is verified the same way whatever
the head proposes.
"""

from __future__ import annotations

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.fixed import ChainPolicy, Plan, PlanInput


class HeadPolicy(ChainPolicy):
    """Draft up to ``min(draft_max, cap)`` tokens with the head (``cap`` 0: no cap of its own;
    a DFlash block drafts at most its block size minus the anchor)."""

    wants = frozenset({TokenOrigin.MTP})  # the generator's slot for a head fed by the target

    def __init__(self, cfg: SpecConfig, cap: int = 0) -> None:
        super().__init__(cfg)
        self.name = cfg.mode.value if cfg.mode in HEAD_MODES else Mode.EAGLE3.value
        self.cap = cap

    def plan(self, inp: PlanInput) -> Plan:
        k = min(self.cfg.draft_max, inp.room)
        if self.cap > 0:
            k = min(k, self.cap)
        if k > 0 and TokenOrigin.MTP in inp.available:
            return Plan(TokenOrigin.MTP, k)
        return Plan(TokenOrigin.TARGET, 0)


HEAD_MODES = (Mode.EAGLE3, Mode.DFLASH, Mode.DSPARK)
