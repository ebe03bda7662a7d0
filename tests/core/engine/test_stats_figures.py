"""GenerationStats' own figures: drafting steps, plain run, per-position counts, snapshots."""

from __future__ import annotations

from specula.core.engine.stats import GenerationStats, StepRecord, StepShape


def _rec(drafted: int, accepted: int, depth: int = 0, shape: StepShape = StepShape.CHAIN) -> StepRecord:
    return StepRecord(step=0, drafted=drafted, accepted=accepted, emitted=accepted + 1,
                      draft_s=0.0, verify_s=0.0, overhead_s=0.0, shape=shape, depth=depth)


def test_per_position_counts_follow_depth_not_tree_nodes() -> None:
    s = GenerationStats()
    s.add_step(_rec(3, 1, depth=3))  # a chain of 3, first kept
    s.add_step(_rec(7, 2, depth=3, shape=StepShape.TREE))  # 7 nodes, 3 deep, 2 kept
    s.add_step(_rec(0, 0))  # plain
    s.add_step(_rec(1, 1, depth=1))
    assert s.drafted_per_pos == (3, 2, 2)  # not 3 positions + 7 tree nodes
    assert s.accepted_per_pos == (3, 1, 0)
    assert s.acceptance_per_pos == (1.0, 0.5, 0.0)
    assert (s.steps, s.drafting_steps, s.plain_run) == (4, 3, 0)
    assert s.accepted_per_drafting_step == 4 / 3 and s.mean_accepted_per_step == 4 / 3


def test_plain_run_counts_the_plain_steps_at_the_end_and_none_when_nothing_drafted() -> None:
    s = GenerationStats()
    for _ in range(3):
        s.add_step(_rec(0, 0))
    assert s.plain_run == 3 and s.accepted_per_drafting_step is None
    assert s.mean_accepted_per_step == 0.0 and s.drafted_per_pos == ()
    assert s.to_dict()["accepted_per_drafting_step"] is None


def test_a_snapshot_does_not_move_with_the_totals() -> None:
    s = GenerationStats()
    s.add_step(_rec(2, 2, depth=2))
    snap = s.snapshot()
    s.add_step(_rec(4, 3, depth=4))
    assert (snap.steps, snap.accepted, snap.drafted_per_pos, snap.accepted_per_pos) == \
        (1, 2, (1, 1), (1, 1))
    assert s.drafted_per_pos == (2, 2, 1, 1)
