"""Which policy serves each mode, and which drafters the adaptive policy chooses among.

The engine knows a policy only through the protocol (``fixed.DraftPolicy``: plan, observe,
verdict, clear); what it tells this module is what it has loaded (:class:`Loaded`: the
drafter kinds, the draft model's calibration, where each pair's models are kept).

A *drafter kind* is something that proposes chains in the draft model's place: the draft
model itself ("draft"), the target's MTP head ("mtp"), and any head another module adds
(EAGLE-3, DFlash) by calling :func:`register_drafter` with the ``TokenOrigin`` its steps
run under and the longest chain worth drafting. With one drafter loaded the adaptive
policy plans with it; with several, each has its own adaptive policy (its own costs,
acceptance and verdict, saved per pair) and :class:`~.mtp_choice.RateChooser` runs the
one with the highest measured tokens per second. Prompt lookup is planned step by step
inside each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.cost_model import Seeder
from specula.core.engine.policy.fixed import ChainPolicy, DraftPolicy, PlainPolicy, TreePolicy
from specula.core.engine.policy.head_choice import HEAD_MODES, HeadPolicy
from specula.core.engine.policy.lookup import LookupPolicy
from specula.core.engine.policy.mtp_choice import MTP_DRAFT_MAX, HeadAsDraft, MTPPolicy, RateChooser


@dataclass(frozen=True)
class DrafterKind:
    """A drafter the adaptive policy can plan with in the draft model's place."""

    name: str  # what the engine calls it when it is loaded ("draft", "mtp", "eagle3", ...)
    origin: TokenOrigin  # the steps it drafts (CHAIN: the draft model itself)
    max_k: int  # the longest chain worth drafting (a head trained one token ahead: short)


DRAFTERS: dict[str, DrafterKind] = {}


def register_drafter(kind: DrafterKind) -> None:
    """Make a drafter kind known: the adaptive policy chooses it when the engine loads it."""
    DRAFTERS[kind.name] = kind


register_drafter(DrafterKind("draft", TokenOrigin.CHAIN, 64))
register_drafter(DrafterKind("mtp", TokenOrigin.MTP, MTP_DRAFT_MAX))
# Draft heads (drafters/heads.py) take the target-fed slot the MTP layers use; their chains
# are capped by the loaded head too (a DFlash block: its size less the anchor).
register_drafter(DrafterKind(Mode.EAGLE3.value, TokenOrigin.MTP, 8))
register_drafter(DrafterKind(Mode.DFLASH.value, TokenOrigin.MTP, 16))
register_drafter(DrafterKind(Mode.DSPARK.value, TokenOrigin.MTP, 16))


@dataclass
class Loaded:
    """What the engine has loaded, as the factories need it."""

    drafters: tuple[str, ...] = ()  # the drafter kinds that can propose, first tried first
    calibration: Seeder | None = None  # the draft model's timing at load (loop/calibration.py)
    state_path: Callable[[str], Path | None] = lambda key: None  # where a pair's models live
    caps: dict[str, int] = field(default_factory=dict)  # a loaded drafter's own chain cap


PolicyFactory = Callable[[SpecConfig, Loaded], DraftPolicy]


def _head(spec: SpecConfig, loaded: Loaded) -> DraftPolicy:
    """A fixed chain from the MTP head (plain without one)."""
    return MTPPolicy(spec) if "mtp" in loaded.drafters else PlainPolicy()


def _fixed(make: Callable[[SpecConfig], DraftPolicy]) -> PolicyFactory:
    """A fixed mode of the draft model; without one, the MTP head's chain."""
    return lambda spec, loaded: make(spec) if "draft" in loaded.drafters else _head(spec, loaded)


def _adaptive(spec: SpecConfig, loaded: Loaded) -> DraftPolicy:
    """One adaptive policy per loaded drafter kind (each with its saved models), and the
    choice among them by measured rate; with none, the cost model over lookup alone."""
    arms: dict[str, DraftPolicy] = {}
    fed = [n for n in loaded.drafters if n in DRAFTERS and DRAFTERS[n].origin is TokenOrigin.MTP]
    for name in loaded.drafters:
        kind = DRAFTERS.get(name)
        if kind is None or (name == "mtp" and len(fed) > 1):
            continue  # one target-fed slot: a loaded draft head takes it from the MTP layers
        if kind.origin is TokenOrigin.CHAIN:
            arms[name] = AdaptivePolicy(spec, loaded.state_path("adaptive"), calibration=loaded.calibration)
        else:
            inner = AdaptivePolicy(spec, loaded.state_path(f"adaptive-{name}"))
            cap = min(kind.max_k, loaded.caps.get(name, kind.max_k))
            arms[name] = HeadAsDraft(inner, kind.origin, cap)
    if not arms:
        return AdaptivePolicy(spec, loaded.state_path("adaptive"))
    if len(arms) == 1:
        return next(iter(arms.values()))
    return RateChooser(arms)


def _draft_head(spec: SpecConfig, loaded: Loaded) -> DraftPolicy:
    """A fixed chain from the loaded draft head of the mode's kind (plain without one)."""
    if spec.mode.value not in loaded.drafters:
        return PlainPolicy()
    return HeadPolicy(spec, loaded.caps.get(spec.mode.value, 0))


POLICIES: dict[Mode, PolicyFactory] = {
    Mode.PLAIN: lambda spec, loaded: PlainPolicy(),
    Mode.CHAIN: _fixed(ChainPolicy),
    Mode.TREE: _fixed(TreePolicy),
    Mode.MTP: _head,
    # Lookup alone uses the adaptive cost model too: it proposes only where proposing
    # pays, so it never costs much more than plain decoding.
    Mode.LOOKUP: lambda spec, loaded: LookupPolicy(spec, loaded.state_path("lookup")),
    Mode.ADAPTIVE: _adaptive,
    **{mode: _draft_head for mode in HEAD_MODES},
}


def build(spec: SpecConfig, loaded: Loaded) -> DraftPolicy:
    """The policy that serves ``spec.mode`` with what is loaded."""
    return POLICIES[spec.mode](spec, loaded)
