"""The policies of a target with an MTP head: fixed mtp, the head in adaptive's draft
place, and the choice between the head and a draft model by measured rate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from specula.core.engine.config import SpecConfig
from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.fixed import Outcome, Plan, PlanInput
from specula.core.engine.policy.mtp_choice import (
    MTP_DRAFT_MAX,
    RETRY_EVERY,
    MTPAsDraft,
    MTPPolicy,
    RateChooser,
)
from specula.core.engine.stats import StepRecord
from specula.core.engine.verdict import PolicyVerdict

ALL = frozenset({TokenOrigin.MTP, TokenOrigin.LOOKUP})


def test_fixed_mtp_plans_short_chains_from_the_head() -> None:
    pol = MTPPolicy(SpecConfig(draft_max=8))
    assert pol.plan(PlanInput(room=10, available=ALL)) == Plan(TokenOrigin.MTP, MTP_DRAFT_MAX)
    assert pol.plan(PlanInput(room=2, available=ALL)) == Plan(TokenOrigin.MTP, 2)
    assert MTPPolicy(SpecConfig(draft_max=1)).plan(PlanInput(room=10, available=ALL)).k == 1
    # the head stopped for this reply: plain steps
    assert pol.plan(PlanInput(room=10, available=frozenset())).source is TokenOrigin.TARGET


@dataclass
class Recorder:
    """A policy that plans what it is told and records what it sees."""

    answer: Plan
    name: str = "adaptive"
    wants: frozenset[TokenOrigin] = frozenset({TokenOrigin.CHAIN, TokenOrigin.TREE, TokenOrigin.LOOKUP})
    reads_confidence: bool = True
    seen: list[PlanInput] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    finished: int = 0
    cleared: int = 0
    said: PolicyVerdict | None = None
    cfg: SpecConfig = field(default_factory=SpecConfig)

    def plan(self, inp: PlanInput) -> Plan:
        self.seen.append(inp)
        return self.answer

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        return True, True

    def observe(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def sync_draft_at_prefill(self) -> bool:
        return False

    def sync_window(self) -> int | None:
        return 7

    def sync_after(self) -> int:
        return 5

    def finish(self) -> None:
        self.finished += 1

    def verdict(self) -> PolicyVerdict | None:
        return self.said

    def clear(self) -> None:
        self.cleared += 1


def outcome(source: TokenOrigin, emitted: int, seconds: float) -> Outcome:
    rec = StepRecord(step=0, drafted=1, accepted=emitted - 1, emitted=emitted, draft_s=0.0,
                     verify_s=0.0, overhead_s=0.0, step_s=seconds, source=source.value)
    return Outcome(source, [0.9], [0.1], emitted - 1, 0, rec)


def test_the_head_takes_the_draft_models_place() -> None:
    inner = Recorder(Plan(TokenOrigin.CHAIN, 6))
    pol = MTPAsDraft(inner)
    assert pol.wants == {TokenOrigin.MTP, TokenOrigin.LOOKUP}
    plan = pol.plan(PlanInput(room=10, available=ALL))
    # the inner policy saw a draft (the head), no tree; its draft plan drafts with the head
    assert inner.seen[-1].available == {TokenOrigin.CHAIN, TokenOrigin.LOOKUP}
    assert plan == Plan(TokenOrigin.MTP, MTP_DRAFT_MAX)
    assert pol.plan(PlanInput(room=10, available=frozenset({TokenOrigin.LOOKUP})))  # no head
    assert inner.seen[-1].available == {TokenOrigin.LOOKUP}
    # what the head did is learnt as the draft's
    pol.observe(outcome(TokenOrigin.MTP, 2, 0.01))
    assert inner.outcomes[-1].source is TokenOrigin.CHAIN
    inner.answer = Plan(TokenOrigin.LOOKUP, 3, [1, 2, 3])
    assert pol.plan(PlanInput(room=10, available=ALL)).source is TokenOrigin.LOOKUP
    assert pol.sync_window() == 7  # a probe's bound is the inner policy's


def _reply(ch: RateChooser, tokens_per_s: dict[str, float]) -> str:
    arm = ch.current
    src = TokenOrigin.MTP if arm == "mtp" else TokenOrigin.CHAIN
    ch.observe(outcome(src, 10, 10 / tokens_per_s[arm]))
    ch.finish()
    return arm


def test_the_faster_of_head_and_draft_model_by_measured_rate() -> None:
    mtp, draft = Recorder(Plan(TokenOrigin.MTP, 2)), Recorder(Plan(TokenOrigin.CHAIN, 4))
    mtp.wants = frozenset({TokenOrigin.MTP})
    ch = RateChooser({"mtp": mtp, "draft": draft})
    assert ch.wants == {TokenOrigin.MTP}
    speed = {"mtp": 30.0, "draft": 20.0}
    arms = [_reply(ch, speed) for _ in range(2 * RETRY_EVERY)]
    assert arms[:2] == ["mtp", "draft"]  # each measured once, then the faster
    assert arms[2:].count("mtp") > arms[2:].count("draft") >= 1  # the slower is retried
    assert mtp.finished + draft.finished == len(arms)
    # the draft model becomes faster (another kind of text): the choice follows
    speed = {"mtp": 10.0, "draft": 40.0}
    arms = [_reply(ch, speed) for _ in range(3 * RETRY_EVERY)]
    assert arms[-RETRY_EVERY:].count("draft") >= RETRY_EVERY - 1
    assert ch.plan(PlanInput(room=5, available=ALL)) == ch.arm.plan(PlanInput(room=5, available=ALL))
    draft.sync_window = lambda: 9  # type: ignore[method-assign]
    assert ch.sync_window() == (9 if ch.arm is draft else 7)


def test_three_drafters_each_slower_one_is_retried_in_turn() -> None:
    """A head registered beside MTP and the draft model: the choice runs over all three,
    and the slower ones are retried in turn (not always the same one)."""
    arms = {name: Recorder(Plan(TokenOrigin.CHAIN, 2)) for name in ("mtp", "eagle3", "draft")}
    ch = RateChooser(dict(arms))
    speed = {"mtp": 10.0, "eagle3": 30.0, "draft": 20.0}
    ran = [_reply(ch, speed) for _ in range(4 * RETRY_EVERY)]
    assert ran[:3] == ["mtp", "eagle3", "draft"]
    later = ran[3:]
    assert later.count("eagle3") > later.count("draft") + later.count("mtp")
    assert later.count("mtp") >= 1 and later.count("draft") >= 1


def test_the_choice_shows_the_verdict_of_the_arm_that_ran_and_re_check_clears_every_arm() -> None:
    mtp, draft = Recorder(Plan(TokenOrigin.MTP, 2)), Recorder(Plan(TokenOrigin.CHAIN, 4))
    mtp.said = PolicyVerdict(paused=True, recheck_in=2)
    draft.said = PolicyVerdict(paused=False, recheck_in=1)
    ch = RateChooser({"mtp": mtp, "draft": draft})
    assert _reply(ch, {"mtp": 10.0, "draft": 20.0}) == "mtp"
    assert ch.verdict() == mtp.said  # the reply the user just saw ran on the head
    assert _reply(ch, {"mtp": 10.0, "draft": 20.0}) == "draft"
    assert ch.verdict() == draft.said
    ch.clear()
    assert mtp.cleared == draft.cleared == 1
    assert ch.rate == {} and ch.current == "mtp"  # every arm is measured again


def test_a_registered_drafter_kind_joins_adaptive_with_its_own_saved_models(tmp_path: Path) -> None:
    """Adding a drafter (a head from the drafters issue) is registering its kind: adaptive
    then runs one policy per loaded drafter, each under its own state file, and plans the
    new head's chains under its origin, cut to its length."""
    from specula.core.engine.config import Mode
    from specula.core.engine.policy import registry
    from specula.core.engine.policy.adaptive import AdaptivePolicy

    registry.register_drafter(registry.DrafterKind("test-head", TokenOrigin.MTP, 2))
    try:
        keys: list[str] = []

        def where(key: str) -> Path:
            keys.append(key)
            return tmp_path / f"{key}.json"

        spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=8)
        pol = registry.build(spec, registry.Loaded(("test-head", "draft", "unknown"), None, where))
        assert isinstance(pol, RateChooser) and list(pol.arms) == ["test-head", "draft"]
        assert keys == ["adaptive-test-head", "adaptive"]
        # the MTP layers and a head both fed by the target share the generator's one slot:
        # the loaded head takes it
        both = registry.build(spec, registry.Loaded(("mtp", "test-head", "draft"), None, where))
        assert isinstance(both, RateChooser) and list(both.arms) == ["test-head", "draft"]
        head = pol.arms["test-head"]
        assert isinstance(head, MTPAsDraft) and head.max_k == 2
        assert isinstance(pol.arms["draft"], AdaptivePolicy)
        # one drafter alone: its policy, no chooser; none: lookup under the adaptive cost model
        alone = registry.build(spec, registry.Loaded(("test-head",), None, where))
        assert isinstance(alone, MTPAsDraft) and alone.wants == {TokenOrigin.MTP, TokenOrigin.LOOKUP}
        none = registry.build(spec, registry.Loaded((), None, where))
        assert isinstance(none, AdaptivePolicy)
        # every mode answers the protocol, Re-check included
        for mode in Mode:
            p = registry.build(SpecConfig(mode=mode), registry.Loaded(("mtp", "draft"), None, where))
            p.clear()
            assert (p.verdict() is None) == (mode is not Mode.ADAPTIVE), mode
    finally:
        registry.DRAFTERS.pop("test-head")


def test_a_loaded_draft_head_is_planned_by_adaptive_and_serves_its_own_mode(tmp_path: Path) -> None:
    """EAGLE-3 / DFlash / DSpark heads are registered drafter kinds: adaptive chooses between a
    loaded head and the draft model by measured rate, each chain cut to the head's own limit
    (a DFlash block's size less its anchor), and the head's mode is a fixed chain from it."""
    from specula.core.engine.config import Mode
    from specula.core.engine.policy import registry
    from specula.core.engine.policy.fixed import PlainPolicy, PlanInput
    from specula.core.engine.policy.head_choice import HeadPolicy

    def where(key: str) -> Path:
        return tmp_path / f"{key}.json"

    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=8)
    loaded = registry.Loaded(("mtp", "dflash", "draft"), None, where, {"dflash": 3})
    pol = registry.build(spec, loaded)
    assert isinstance(pol, RateChooser) and list(pol.arms) == ["dflash", "draft"]
    head = pol.arms["dflash"]
    assert isinstance(head, MTPAsDraft) and head.max_k == 3 and head.origin is TokenOrigin.MTP
    fixed = registry.build(SpecConfig(mode=Mode.DFLASH, draft_max=8), loaded)
    assert isinstance(fixed, HeadPolicy)
    plan = fixed.plan(PlanInput(room=100, available=frozenset({TokenOrigin.MTP})))
    assert (plan.source, plan.k) == (TokenOrigin.MTP, 3)
    # a head mode whose kind is not loaded runs plain
    assert isinstance(registry.build(SpecConfig(mode=Mode.EAGLE3), loaded), PlainPolicy)
