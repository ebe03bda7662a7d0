"""Adaptive on multi-turn edits: it must not be slower than prompt lookup alone, nor than
the draft chain, where the reply repeats an earlier turn (fake machine: adaptive_sim.py).

The machine is the F16 1.5B target on one core as calibrated here, with the 0.5B draft
and a 600-token conversation whose batched feed to the draft costs 1.46 s: most of the
reply is copied, which lookup proposes for the price of a verify, and feeding the draft
the conversation costs a quarter of a 64-token reply."""

from __future__ import annotations

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, DraftPolicy, PlainPolicy
from tests.core.engine.adaptive_sim import Machine, Reply, edit_script, run_reply, script

F16_CAL = {1: 0.092, 2: 0.169, 3: 0.175, 4: 0.195, 5: 0.204, 6: 0.215, 7: 0.242, 8: 0.296, 13: 0.321}
F16_EDIT = Machine(verify=lambda n: F16_CAL.get(n, 0.296 + 0.02 * (n - 8)), draft=0.0184,
                   catchup_per_token=0.0113, prompt=600, prompt_s=1.46)
F16_CODE = Machine(verify=F16_EDIT.verify, draft=0.0184, catchup_per_token=0.0113,
                   prompt=60, prompt_s=0.30)


def _policy(mode: Mode, m: Machine, draft_max: int = 3) -> AdaptivePolicy:
    pol = AdaptivePolicy(SpecConfig(mode=mode, draft_max=draft_max, tree_budget=0),
                         allow_draft=mode is Mode.ADAPTIVE)
    m.calibration().seed(pol.cost)
    return pol


def _session(pol: DraftPolicy, m: Machine, seeds: range, edits: bool = True) -> list[Reply]:
    out = []
    for s in seeds:
        if edits:
            ok, p_top, code, lok = edit_script(200, s)
            out.append(run_reply(pol, m, ok, p_top, lookup=(code, lok)))
        else:
            out.append(run_reply(pol, m, *script(0.9, 200, s, bursty=True), lookup=([0] * 200, [False] * 200)))
    return out


SEEDS = range(6)


def test_on_edits_adaptive_is_as_fast_as_the_better_of_lookup_and_the_chain_on_every_reply() -> None:
    adaptive = _session(_policy(Mode.ADAPTIVE, F16_EDIT), F16_EDIT, SEEDS)
    lookup = _session(_policy(Mode.LOOKUP, F16_EDIT), F16_EDIT, SEEDS)
    chain = _session(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=3)), F16_EDIT, SEEDS)
    for i, (a, lk, c) in enumerate(zip(adaptive, lookup, chain, strict=True)):
        best = max(lk.rate, c.rate)
        assert a.rate >= 0.95 * best, (i, a.rate, lk.rate, c.rate)


def test_on_edits_lookup_serves_the_copied_spans() -> None:
    """Where lookup's long match is right, adaptive proposes it (not the draft): after the
    first few steps of a session, most steps are lookup steps."""
    replies = _session(_policy(Mode.ADAPTIVE, F16_EDIT), F16_EDIT, SEEDS)
    steps = [src for r in replies for src, _, _ in r.steps]
    assert steps[8:].count("lookup") >= 0.6 * len(steps[8:]), steps


@pytest.mark.parametrize("draft_max", [3, 6])
def test_on_code_without_lookup_matches_adaptive_still_drafts_from_its_first_step(draft_max: int) -> None:
    """A short prompt's catch-up is paid as before (exploration): the first draft step is
    the first step that may draft, and the chain's rate is reached."""
    pol = _policy(Mode.ADAPTIVE, F16_CODE, draft_max)
    replies = _session(pol, F16_CODE, range(3), edits=False)
    assert replies[0].steps[0][0] == "draft"
    chain = _session(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=draft_max)), F16_CODE,
                     range(3), edits=False)
    for a, c in zip(replies, chain, strict=True):
        assert a.rate >= 0.95 * c.rate, (a.rate, c.rate)


def _code_with_short_matches(seed: int) -> tuple[list[bool], list[float], list[int], list[bool]]:
    """Fresh code: the draft is right in runs (bursty, 90%), and a third of the positions
    have a short lookup match (code 3 or 4: a coincidence of a few tokens) that is wrong."""
    ok, p_top = script(0.9, 200, seed, bursty=True)
    rng = np.random.default_rng(100 + seed)
    code = [int(rng.choice([3, 4])) if rng.random() < 0.33 else 0 for _ in range(200)]
    return ok, p_top, code, [False] * 200


def test_on_code_a_short_lookup_match_is_not_probed_while_the_draft_pays() -> None:
    """A rejected lookup probe costs a draft step (a 5-token verify for one token); while the
    draft is in sync and pays, short matches are left alone and the reply keeps the chain's
    rate."""
    pol = _policy(Mode.ADAPTIVE, F16_CODE, 6)
    steps = []
    for s in range(3):
        ok, p_top, code, lok = _code_with_short_matches(s)
        steps += run_reply(pol, F16_CODE, ok, p_top, lookup=(code, lok)).steps
    assert [st for st in steps if st[0] == "lookup"] == []


def test_a_long_copy_is_still_probed_while_the_draft_pays() -> None:
    pol = _policy(Mode.ADAPTIVE, F16_CODE, 6)
    ok, p_top, code, lok = edit_script(200, 0)
    first = run_reply(pol, F16_CODE, ok, p_top, lookup=(code, lok))
    assert any(src == "lookup" for src, _, _ in first.steps)


def test_a_long_catch_up_is_costed_per_token_of_a_long_feed() -> None:
    """Catching the draft up on a 600-token conversation costs what the machine's batched
    feed does (1.46 s here), not 600 times a short feed's per-token cost (6.8 s)."""
    pol = _policy(Mode.ADAPTIVE, F16_EDIT)
    assert pol.cost.catchup_time(600) == pytest.approx(F16_EDIT.feed(600) - F16_EDIT.draft)
    assert pol.cost.catchup_time(5) == pytest.approx(4 * F16_EDIT.catchup_per_token)
    # and it is learnt from a long catch-up step when the calibration had none
    pol.cost.catchup_long_per_token = None
    pol.cost.observe_draft(3, 600, F16_EDIT.feed(600) + 2 * F16_EDIT.draft)
    assert pol.cost.catchup_time(600) == pytest.approx(F16_EDIT.feed(600) - F16_EDIT.draft)


MID = Machine(verify=F16_EDIT.verify, draft=0.0184, catchup_per_token=0.0113, prompt=300, prompt_s=0.5)


def test_in_an_edit_session_a_reply_that_starts_with_new_text_does_not_pay_the_catch_up() -> None:
    """A 300-token conversation (its catch-up 0.5 s: short enough to be paid as exploration
    in a session's first reply) whose replies start with an edited spot: once lookup has
    served most steps, the next replies do not feed the draft for a few draft steps, and
    keep lookup's rate. (The session's first reply still pays it: it knows nothing yet.)"""
    def session(pol: DraftPolicy) -> list[Reply]:
        out = []
        for s in SEEDS:
            ok, p_top, code, lok = edit_script(200, s, edit_first=True)
            out.append(run_reply(pol, MID, ok, p_top, lookup=(code, lok)))
        return out

    adaptive = session(_policy(Mode.ADAPTIVE, MID))
    lookup = session(_policy(Mode.LOOKUP, MID))
    for i in range(1, len(SEEDS)):  # every reply after the session's first
        assert adaptive[i].rate >= 0.95 * lookup[i].rate, (i, adaptive[i].rate, lookup[i].rate)


# A compute-bound target as measured on one busy core (Q4_K_M 1.5B: every verified token
# costs half a step more, a draft decode 60% of one): no draft chain can pay.
Q4_BUSY = Machine(verify=lambda n: 0.423 * (1 + 0.52 * (n - 1)), draft=0.256, catchup_per_token=0.05,
                  prompt_s=1.0)


def _bad_lookup(n: int, seed: int) -> tuple[list[int], list[bool]]:
    """Fresh code: a third of the positions have a match (short ones and the n-gram cache's
    guesses, codes 3-7 and 11-14), right one time in five."""
    rng = np.random.default_rng(seed)
    codes = [int(rng.choice([3, 4, 5, 6, 7, 11, 12, 13, 14])) if rng.random() < 0.3 else 0 for _ in range(n)]
    return codes, [bool(rng.random() < 0.2) for _ in range(n)]


def _over_plain_with_bad_lookup() -> list[float]:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    Q4_BUSY.calibration().seed(pol.cost)
    out = []
    for s in range(4):
        ok, p_top = script(0.85, 96, s)
        look = _bad_lookup(96, s)
        got = run_reply(pol, Q4_BUSY, ok, p_top, max_tokens=96, lookup=look)
        plain = run_reply(PlainPolicy(), Q4_BUSY, ok, p_top, max_tokens=96, lookup=look)
        out.append(got.rate / plain.rate)
    return out


def test_lookup_that_proposes_badly_loses_its_turn_on_a_compute_bound_target() -> None:
    """The first reply of a new pair included, every reply stays within 3% of plain."""
    got = _over_plain_with_bad_lookup()
    assert min(got) >= 0.97, got


def test_power_unbudgeted_lookup_probes_lose_the_first_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AdaptivePolicy, "_lookup_budget", lambda self, v1: True)
    got = _over_plain_with_bad_lookup()
    assert got[0] < 0.97, got
