"""One reply's running state in the decode loop: the tokens so far, its statistics,
and why it stopped, kept in one place so the loop's named steps share it openly."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from specula.core.engine.drafters import Drafter, Proposal
from specula.core.engine.events import Done, StopReason, TokenOrigin
from specula.core.engine.native.checkpoints import KVCosts
from specula.core.engine.sampling.rules import AcceptanceRule
from specula.core.engine.stats import GenerationStats
from specula.core.engine.verify.result import VerifyResult


@dataclass
class ReplyRun:
    """What one reply has done so far (the generator's loop advances it step by step)."""

    prompt: list[int]
    stats: GenerationStats
    active: dict[TokenOrigin, Drafter]  # the drafters the policy may plan with
    t_start: float = field(default_factory=time.perf_counter)
    committed: list[int] = field(default_factory=list)  # the prompt, then every token kept
    generated: list[int] = field(default_factory=list)  # the reply's tokens alone
    released: list[str] = field(default_factory=list)  # text handed out (stop strings held back)
    step: int = 0
    reason: StopReason | None = None  # set once the reply ends
    message: str = ""  # a human sentence for CONTEXT_FULL / ERROR
    tree_rule: AcceptanceRule | None = None  # the trees' rule, when not the reply's
    chain_verified: bool = False  # a drafted chain was verified by the reply's rule

    def __post_init__(self) -> None:
        self.committed = list(self.prompt)

    def stop(self, reason: StopReason, message: str = "") -> None:
        """End the reply after this step, for ``reason``."""
        self.reason, self.message = reason, message

    def draft_stopped(self) -> str:
        """Why a drafter stopped for the rest of the reply ("" while none did)."""
        return next((d.stopped for d in self.active.values() if d.stopped), "")

    def note_rule(self, prop: Proposal, res: VerifyResult, rule: AcceptanceRule) -> None:
        """Keep ``stats.acceptance_rule`` true when trees are walked by another rule than
        the reply's (rejection sampling walks a tree by sample-and-match): the figure
        names both once a reply has verified a chain by one and a tree by the other."""
        if prop.tokens and prop.tree is None:
            self.chain_verified = True
        if res.rule is not rule:
            self.tree_rule = res.rule
        if self.tree_rule is not None:
            self.stats.acceptance_rule = (
                f"{rule.value}, trees by {self.tree_rule.value}"
                if self.chain_verified else self.tree_rule.value)

    def done(self, reason: StopReason | None, message: str, mirror: tuple[KVCosts, KVCosts]) -> Done:
        """The closing event: the totals, with ``mirror`` (what keeping both caches exact
        cost over the reply) added."""
        stats = self.stats
        stats.add_mirror_costs(*mirror)
        stats.total_s = time.perf_counter() - self.t_start
        stats.tokens = len(self.generated)
        stats.draft_stopped = self.draft_stopped()
        stats.sample_memory()
        assert reason is not None  # every path out of the loop names why
        return Done(reason, "".join(self.released), list(self.generated), stats, message,
                    list(self.prompt))
