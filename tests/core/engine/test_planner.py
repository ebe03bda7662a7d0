"""The planner (policy/planner.py) through its signature: every expectation below is worked
out by hand in the test (the arithmetic written out, not the module's functions)."""

from __future__ import annotations

import pytest

from specula.core.engine.events import TokenOrigin
from specula.core.engine.policy.planner import (
    CatchUp,
    Option,
    best_chain,
    best_lookup,
    choose,
    expected_tokens,
    tree_best_case,
)

# A verify curve with a jump from 1 to 2 tokens, then flat-ish (an F16 target on a CPU).
VERIFY = {1: 0.100, 2: 0.180, 3: 0.190, 4: 0.200, 5: 0.300, 6: 0.310}


def verify(n: int) -> float:
    return VERIFY[n]


def test_expected_tokens_of_a_chain() -> None:
    # a = 0.5, k = 2: 1 + 0.5 + 0.25
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)
    assert expected_tokens(1.0, 3) == 4.0
    assert expected_tokens(0.0, 5) == pytest.approx(1.0)


def test_the_best_chain_by_hand() -> None:
    # expected tokens of chains of 1..4 (say an acceptance model's), a draft decode of 10 ms
    expected = [1.8, 2.4, 2.9, 3.1]
    # k=1: 1.8 / (0.010 + 0.180) = 9.4737   k=2: 2.4 / (0.020 + 0.190) = 11.4286
    # k=3: 2.9 / (0.030 + 0.200) = 12.6087  k=4: 3.1 / (0.040 + 0.300) = 9.1176
    rate, k = best_chain(expected, 0.010, verify)
    assert k == 3 and rate == pytest.approx(2.9 / 0.230)
    # a rollback of 50 ms per drafted step: k=1 7.5, k=2 9.2308, k=3 10.3571, k=4 7.9487
    rate, k = best_chain(expected, 0.010, verify, rollback_s=0.050)
    assert k == 3 and rate == pytest.approx(2.9 / 0.280)


def test_a_one_time_catch_up_is_shared_over_the_room_it_serves() -> None:
    # 0.4 s paid once over 20 draftable tokens, 5 ms every step: a step of e tokens pays
    # 0.005 + 0.4 * e / 20
    cu = CatchUp(recurring=0.005, once=0.4, room=20)
    assert cu.share(2.0) == pytest.approx(0.045)
    assert cu.share(40.0) == pytest.approx(0.405)  # never more than the whole catch-up
    expected = [1.8, 2.4, 2.9, 3.1]
    # k=1: 1.8/(0.005+0.036+0.010+0.180)=7.7922  k=2: 2.4/(0.005+0.048+0.020+0.190)=9.1255
    # k=3: 2.9/(0.005+0.058+0.030+0.200)=9.8976  k=4: 3.1/(0.005+0.062+0.040+0.300)=7.6167
    rate, k = best_chain(expected, 0.010, verify, catchup=cu)
    assert k == 3 and rate == pytest.approx(2.9 / 0.293)


def test_the_best_lookup_by_hand() -> None:
    # a = 0.9: E(1) = 1.9, E(2) = 2.71, E(3) = 3.439, E(4) = 4.0951
    # rates: 1.9/0.18 = 10.556, 2.71/0.19 = 14.263, 3.439/0.2 = 17.195, 4.0951/0.3 = 13.650
    rate, k = best_lookup(0.9, 4, verify)
    assert k == 3 and rate == pytest.approx(3.439 / 0.2)
    # a match of two tokens can propose two at most
    rate, k = best_lookup(0.9, 2, verify)
    assert k == 2 and rate == pytest.approx(2.71 / 0.19)


def test_a_trees_best_case_by_hand() -> None:
    # depth 2, 5 nodes: 3 tokens for 2 decodes of 10 ms and a verify of 6 tokens
    assert tree_best_case(2, 5, 0.010, verify) == pytest.approx(3 / (0.020 + 0.310))


def test_choose_the_fastest_step_that_beats_plain_by_the_margin() -> None:
    plain_s = 0.100  # 10 tokens/s; with a 2% margin an option needs more than 10.2
    chain = Option(TokenOrigin.CHAIN, 3, 10.1)
    look = Option(TokenOrigin.LOOKUP, 2, 10.25)
    assert choose(plain_s, [chain], 0.02).source is TokenOrigin.TARGET  # within the margin
    assert choose(plain_s, [chain, look], 0.02) == look
    faster = Option(TokenOrigin.CHAIN, 3, 12.0)
    assert choose(plain_s, [faster, look], 0.02) == faster
    tie = Option(TokenOrigin.LOOKUP, 2, 12.0)
    assert choose(plain_s, [faster, tie], 0.02) == faster  # on a tie the earlier option
    plain = choose(plain_s, [], 0.02)
    assert plain.source is TokenOrigin.TARGET and plain.k == 0 and plain.rate == pytest.approx(10.0)
