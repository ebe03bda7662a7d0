"""MTP as a built-in draft, on a tiny qwen35 with one NextN layer.

The MTP head only proposes; the target verifies every token with the same rules
as any draft, so the reply is the target's: greedy equals plain, a seed under the
coupled rule gives plain's text, and rejection sampling draws from the target's
law (chi-square against the independent reference). What is the head's own is
checked against an independent computation: every row it is fed must be a fresh
target's hidden row of the token before (llama.cpp's pairing), whatever was
accepted or rejected on the way.

The target is hybrid (gated delta net + attention): its own cut after a rejected
draft is the KV mirror's checkpoint and replay (kv.py), which these tests rely on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp as L
import numpy as np
import pytest
from llama_cpp import llama_cpp_ext as X

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.mtp import MTPHead
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import StopReason, TokenOrigin
from specula.core.engine.native import mtp as mtp_native
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import LoadError, Model
from specula.core.engine.policy.fixed import PlainPolicy
from specula.core.engine.policy.mtp_choice import MTP_DRAFT_MAX, MTPAsDraft, MTPPolicy
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, run
from tests.core.engine.reference import FreshTarget, Transform
from tests.core.engine.sampling_runs import ALPHA_PASS, check, prompt_of, spec

PROMPTS = ["hello world the model", "def print(self): return the code", "x",
           "the model and the token " * 4]
GREEDY = SamplingParams(max_tokens=40)
MTP = SpecConfig(mode=Mode.MTP)


@pytest.fixture(scope="module")
def models(families: dict[str, Path]) -> dict[str, Path]:
    """The qwen35 with one NextN layer, and the same trunk without it."""
    return {"mtp": families["qwen35-mtp"], "qwen35": families["qwen35"]}


def make(path: Path, **kw: Any) -> Engine:
    eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False, **kw))
    eng.load_target(path)
    return eng


@pytest.fixture
def eng(models: dict[str, Path]) -> Iterator[Engine]:
    e = make(models["mtp"])
    yield e
    e.close()


# -- what is loaded ----------------------------------------------------------------------


def test_a_target_with_nextn_has_a_head(eng: Engine) -> None:
    assert eng.mtp_layers == 1
    assert isinstance(eng.policy_for(MTP), MTPPolicy)
    # chain and tree without a draft model draft with the head
    assert isinstance(eng.policy_for(SpecConfig(mode=Mode.CHAIN)), MTPPolicy)
    adaptive = eng.policy_for(SpecConfig(mode=Mode.ADAPTIVE))
    assert isinstance(adaptive, MTPAsDraft) and TokenOrigin.MTP in adaptive.wants


def test_no_nextn_no_head_and_no_mtp_context(models: dict[str, Path], tiny: dict[str, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A model without NextN layers never opens an MTP context (which would abort the
    process on weights without them): no head, mode mtp runs plain, the CLI refuses it."""
    from specula.commands._engine_args import check_mtp

    opened: list[object] = []
    real = mtp_native.MTPContext.__init__

    def spy(self: mtp_native.MTPContext, *a: Any, **kw: Any) -> None:
        opened.append(a)
        real(self, *a, **kw)

    monkeypatch.setattr(mtp_native.MTPContext, "__init__", spy)
    for path in (models["qwen35"], tiny["target"]):
        e = make(path)
        try:
            assert e.mtp_layers == 0
            assert isinstance(e.policy_for(MTP), PlainPolicy)
            done, events = run(e, PROMPTS[0], GREEDY, MTP)
            assert done.stats.drafted == 0 and all(ev.source is TokenOrigin.TARGET for ev in events)
            with pytest.raises(LoadError, match="no MTP"):
                check_mtp(e, ["mtp"])
        finally:
            e.close()
    assert opened == []


def test_the_guard_refuses_weights_loaded_without_mtp(models: dict[str, Path]) -> None:
    """The pitfall: an MTP context over weights loaded without their MTP layers aborts in
    llama.cpp; MTPContext refuses in Python instead."""
    model = Model(models["mtp"])  # load_mtp off
    ctx = Context(model, n_ctx=64, n_threads=1)
    try:
        with pytest.raises(LoadError, match="MTP layers were not loaded"):
            mtp_native.MTPContext(model, ctx, n_batch=16)
    finally:
        ctx.close()
        model.close()


def test_mtp_off_loads_no_head(models: dict[str, Path]) -> None:
    e = make(models["mtp"], mtp=False)
    try:
        assert e.mtp_layers == 0
    finally:
        e.close()


# -- exactness -----------------------------------------------------------------------------


def test_greedy_mtp_equals_plain_and_drafts(eng: Engine) -> None:
    drafted = accepted = 0
    for prompt in PROMPTS:
        plain, _ = run(eng, prompt, GREEDY, PLAIN)
        assert plain.stop_reason is StopReason.MAX_TOKENS
        done, events = run(eng, prompt, GREEDY, MTP)
        assert done.token_ids == plain.token_ids, prompt
        assert done.text == plain.text
        assert done.stats.mode == "mtp"
        drafted += done.stats.drafted
        accepted += done.stats.accepted
        # accepted head tokens are the MTP source, coloured as drafted
        assert sum(ev.source is TokenOrigin.MTP for ev in events) == done.stats.draft_tokens_emitted
    assert drafted > 0
    assert accepted > 0


def test_two_replies_and_a_cut_near_a_full_context(models: dict[str, Path]) -> None:
    """A second reply reuses the prefix (the head keeps what it fed); a reply that runs
    into the window's end stops like plain."""
    e = make(models["mtp"])
    try:
        conv = [{"role": "user", "content": PROMPTS[1]}]
        a = list(e.chat(conv, GREEDY, MTP))[-1]
        conv += [{"role": "assistant", "content": a.text}, {"role": "user", "content": "x"}]
        b_mtp = list(e.chat(conv, GREEDY, MTP))[-1]
        b_plain = list(e.chat(conv, GREEDY, PLAIN))[-1]
        assert b_mtp.token_ids == b_plain.token_ids
    finally:
        e.close()
    small = Engine(EngineOptions(n_ctx=64, n_threads=1, calibrate=False))
    small.load_target(models["mtp"])
    try:
        long = SamplingParams(max_tokens=200)
        reasons = set()
        assert small.target_model is not None
        words = small.target_model.tokenize(" ".join(PROMPTS * 8))
        for room in (4, 6, 9, 12, 16):  # raw prompts that leave the reply a few cells
            n = small.n_ctx - room  # (llama.cpp rounds n_ctx up to 256)
            plain, _ = run(small, words[:n], long, PLAIN)
            done, _ = run(small, words[:n], long, MTP)
            assert done.stop_reason is plain.stop_reason
            assert done.token_ids == plain.token_ids
            reasons.add(done.stop_reason)
        assert StopReason.CONTEXT_FULL in reasons
    finally:
        small.close()


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_coupled_seed_gives_plains_text(eng: Engine, seed: int) -> None:
    params = SamplingParams(max_tokens=40, temperature=0.9, top_k=40, seed=seed)
    plain, _ = run(eng, PROMPTS[0], params, PLAIN)
    done, _ = run(eng, PROMPTS[0], params, MTP)
    assert done.stats.acceptance_rule == "coupled"
    assert done.stats.drafted > 0
    assert done.token_ids == plain.token_ids


def test_rejection_sampling_draws_from_the_target(models: dict[str, Path]) -> None:
    """Chi-square of the first 3 tokens against the reference (a fresh target per prefix)."""
    e = make(models["mtp"])
    ref = FreshTarget(models["mtp"])
    try:
        res = check("mtp k=2, rejection, top-k 5", e, ref, prompt_of(e), Transform(temperature=0.8, top_k=5), 3,
                    spec("mtp", draft_max=2), 2000)
    finally:
        ref.close()
        e.close()
    assert res.p > ALPHA_PASS
    assert res.tally.drafted > 0 and res.tally.accepted > 0
    assert res.tally.rules == {"rejection-sampling"}


# -- the head's inputs --------------------------------------------------------------------


def _recorded_rows(eng: Engine, head: MTPHead) -> list[tuple[int, list[int], np.ndarray]]:
    """Every decode of the head fed with the target's rows (not its own drafted chain)."""
    fed: list[tuple[int, list[int], np.ndarray]] = []
    decode = head.mtp.decode
    own = False

    def recording(tokens: list[int], pos0: int, rows: np.ndarray, *, logits: bool = True) -> float:
        if not own:
            fed.append((pos0, list(tokens), np.array(rows, copy=True)))
        return decode(tokens, pos0, rows, logits=logits)

    feed_one = head.feed_one

    def own_row(token: int, *, first: bool = False) -> float | None:
        nonlocal own
        own = True
        try:
            return feed_one(token, first=first)
        finally:
            own = False

    head.mtp.decode = recording  # type: ignore[method-assign]
    head.feed_one = own_row  # type: ignore[method-assign]
    return fed


def _fresh_rows(eng: Engine, tokens: list[int], n_embd: int) -> np.ndarray:
    """The independent reference: a fresh target context over ``tokens`` in one batch,
    its hidden row of every token (what llama.cpp's MTP pairs with the next token)."""
    assert eng.target_model is not None
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 1
    ctx = L.llama_init_from_model(eng.target_model.ptr, cp)
    try:
        X.llama_set_embeddings_nextn(ctx, True, False)
        arr = (L.llama_token * len(tokens))(*tokens)
        assert L.llama_decode(ctx, L.llama_batch_get_one(arr, len(tokens))) == 0
        ptr = X.llama_get_embeddings_nextn(ctx)
        return np.ctypeslib.as_array(ptr, shape=(len(tokens) * n_embd,)).reshape(
            len(tokens), n_embd).copy()
    finally:
        L.llama_free(ctx)


@pytest.mark.parametrize("params", [GREEDY, SamplingParams(max_tokens=40, temperature=0.9, seed=3)],
                         ids=["greedy", "coupled"])
def test_every_row_fed_is_the_targets_row_of_the_token_before(eng: Engine,
                                                              params: SamplingParams) -> None:
    """Prefill, plain steps, verify steps with rejections, the carried row m, and a second
    reply: each token the head is fed from the target pairs with a fresh target's row of
    the token before it (zeros at position 0), as in llama.cpp's draft-mtp loop."""
    _check_rows(eng, params)


def test_a_carry_one_row_off_is_caught(eng: Engine) -> None:
    """The check above has power: rows of the token itself instead of the one before."""
    head = eng._mtp
    assert head is not None
    right = head.rows_for

    def shifted(start: int, end: int, window: np.ndarray | None, valid: int) -> np.ndarray:
        return right(start + 1, end + 1, window, valid)

    head.rows_for = shifted  # type: ignore[method-assign]
    with pytest.raises(AssertionError):
        _check_rows(eng, GREEDY)


def _check_rows(eng: Engine, params: SamplingParams) -> None:
    head = eng._mtp
    assert head is not None
    fed = _recorded_rows(eng, head)
    conv = [{"role": "user", "content": PROMPTS[0]}]
    first = list(eng.chat(conv, params, MTP))[-1]
    conv += [{"role": "assistant", "content": first.text}, {"role": "user", "content": PROMPTS[2]}]
    done = list(eng.chat(conv, params, MTP))[-1]
    assert done.stats.drafted > 0
    seq = [*done.prompt_token_ids, *done.token_ids]
    ref = _fresh_rows(eng, seq, head.n_embd)
    covered: set[int] = set()
    for pos0, tokens, rows in fed:
        for i, tok in enumerate(tokens):
            p = pos0 + i
            if p >= len(seq) or seq[p] != tok:
                continue  # an entry of the first reply the second one no longer holds
            want = ref[p - 1] if p > 0 else np.zeros(head.n_embd, np.float32)
            # batch shapes change float sums by ~1e-4; a neighbour's row differs by ~1
            assert float(np.abs(rows[i] - want).max()) < 5e-3, (p, pos0, len(tokens))
            covered.add(p)
    # every position went through the head but the last step's (at most MTP_DRAFT_MAX + 1
    # tokens: the reply ends before the head is fed what that step emitted)
    assert covered >= set(range(len(done.prompt_token_ids)))
    assert len(covered) >= len(seq) - 1 - (MTP_DRAFT_MAX + 1)
    assert head.missing_rows == 0
    # the mirror is the context: what the head says it holds is what llama.cpp holds
    assert head.ctx.pos_max(0) + 1 == len(head.tokens)


def test_adaptive_drafts_with_the_head_when_no_draft_model(eng: Engine) -> None:
    """Adaptive on a target with MTP and no draft model drafts with the head (MTP tokens),
    and the reply is plain's. The clock is fake so the policy's timing-based choices are a
    function of the code path alone."""
    from tests.core.engine.sampling_runs import fake_clock

    spec_ = SpecConfig(mode=Mode.ADAPTIVE, draft_max=3)
    sources: set[str] = set()
    with fake_clock():
        for prompt in PROMPTS:
            plain, _ = run(eng, prompt, GREEDY, PLAIN)
            done, events = run(eng, prompt, GREEDY, spec_)
            assert done.token_ids == plain.token_ids, prompt
            sources |= {ev.source.value for ev in events}
    assert "mtp" in sources


def test_info_says_how_to_draft_with_the_head(models: dict[str, Path]) -> None:
    from specula.commands.info import format_info
    from specula.core.gguf.model_info import read_model_info

    assert "--mode mtp" in format_info(read_model_info(models["mtp"]))
    assert "--mode mtp" not in format_info(read_model_info(models["qwen35"]))


def test_a_head_that_cannot_open_leaves_the_target_usable(models: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Drafting is optional: when the MTP context cannot be made (memory), the target loads
    and replies without its head."""
    def refuse(self: mtp_native.MTPContext, *a: Any, **kw: Any) -> None:
        raise LoadError("could not create a context (not enough memory?)")

    monkeypatch.setattr(mtp_native.MTPContext, "__init__", refuse)
    e = make(models["mtp"])
    try:
        assert e.has_target and e.mtp_layers == 0
        done, _ = run(e, PROMPTS[2], GREEDY, MTP)
        assert done.stats.drafted == 0 and done.token_ids
    finally:
        e.close()


def test_with_a_draft_model_too_adaptive_tries_both_then_the_faster(
        models: dict[str, Path], families: dict[str, Path]) -> None:
    """Head and draft model both there: each reply runs one of the two adaptive policies
    (the head's first, then the draft model's, then by measured rate); every reply is
    plain's, and the head follows only the replies it may draft in."""
    from specula.core.engine.policy.mtp_choice import RateChooser
    from tests.core.engine.sampling_runs import fake_clock

    e = make(models["mtp"])
    try:
        e.load_draft(families["qwen35-mtp-draft"])
        pol = e.policy_for(SpecConfig(mode=Mode.ADAPTIVE, draft_max=3))
        assert isinstance(pol, RateChooser)
        arms, watched = [], []
        with fake_clock():
            for prompt in PROMPTS[:3]:
                plain, _ = run(e, prompt, GREEDY, PLAIN)
                arms.append(pol.current)
                done, _ = run(e, prompt, GREEDY, SpecConfig(mode=Mode.ADAPTIVE, draft_max=3))
                watched.append(e._mtp.watching if e._mtp is not None else None)
                assert done.token_ids == plain.token_ids, prompt
        assert arms[:2] == ["mtp", "draft"]
        assert set(pol.rate) == {"mtp", "draft"}
        assert watched[:2] == [True, False]
    finally:
        e.close()
