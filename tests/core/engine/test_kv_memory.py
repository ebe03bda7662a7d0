"""The KV mirror on every memory: recurrent and hybrid caches are cut exactly.

The reference is independent of the engine: a fresh llama.cpp context fed the
whole prefix in one batch (``FreshTarget``, ``fresh_logits``). Every check runs
on the tiny model of each family (``specula_tools.tiny_families``): two pure
recurrent ones (mamba, mamba2), three hybrids (qwen35's gated delta net,
granitehybrid's Mamba-2, lfm2's short convolutions) and an attention MoE
(qwen3moe), each with its noisy same-architecture draft.

Power (these tests fail when the rule they guard is broken): the old cut, which
cleared a cache that refused a partial seq_rm and went on, and a mirror that
trusts llama.cpp's n_rs_seq snapshot rollback beyond the last decode, are both
patched in at the end of this file, and the same checks must then fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import StopReason
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import CutFailed, KVCache
from specula.core.engine.native.llama import MemoryKind, Model
from specula.core.engine.sampling.rules import Rule, SamplingParams
from tests.core.engine.conftest import closing_all, fresh_logits, logits_after, run
from tests.core.engine.reference import FreshTarget, Transform
from tests.core.engine.sampling_runs import (
    ALPHA_PASS,
    check,
    fake_clock,
    make_engine,
    prompt_of,
    spec,
)

# What llama.cpp's architecture tables say each family's memory is (llama-arch.cpp:
# llm_arch_is_recurrent / llm_arch_is_hybrid), written down here, not asked of the code.
MEMORY = {
    "mamba": MemoryKind.RECURRENT,
    "mamba2": MemoryKind.RECURRENT,
    "qwen35": MemoryKind.HYBRID,
    "granitehybrid": MemoryKind.HYBRID,
    "lfm2": MemoryKind.HYBRID,
    "qwen3moe": MemoryKind.ATTENTION,
}
RECURRENT_FAMILIES = [f for f, m in MEMORY.items() if m is not MemoryKind.ATTENTION]
MODES = ["chain", "tree", "lookup", "adaptive"]
TOKENS = [10 + (i * 13) % 250 for i in range(120)]
PROMPT = "def hello(): return hello world the code and the draft token model"


def greedy_reference(ref: FreshTarget, prompt: list[int], n: int) -> list[int]:
    """The target's greedy reply, each token from a fresh context over the whole prefix."""
    out: list[int] = []
    for _ in range(n):
        tok = int(np.argmax(ref.logits([*prompt, *out])))
        if ref.is_eog(tok):
            break
        out.append(tok)
    return out


@pytest.fixture(scope="module")
def refs(families: dict[str, Path]) -> Iterator[dict[str, FreshTarget]]:
    with closing_all({f: FreshTarget(families[f]) for f in MEMORY}) as out:
        yield out


_ENGINES: dict[str, Engine] = {}


@pytest.fixture(scope="module")
def engines(families: dict[str, Path]) -> Iterator[dict[str, Engine]]:
    """One engine per family: the tiny target and its noisy draft, one thread."""
    for f in MEMORY:
        eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False))
        eng.load_target(families[f])
        eng.load_draft(families[f + "-draft"])
        _ENGINES[f] = eng
    yield _ENGINES
    for eng in _ENGINES.values():
        eng.close()
    _ENGINES.clear()


def _mirror_true(eng: Engine) -> None:
    """The invariant, asked of llama.cpp: sequence 0 ends where each mirror says."""
    gen = eng.generator
    assert gen is not None
    assert gen.ctx.pos_max(0) + 1 == len(gen.kv), "target mirror"
    if gen.draft_model is not None:
        assert gen.draft_model.ctx.pos_max(0) + 1 == len(gen.draft_model.kv), "draft mirror"


# -- what a context knows about its memory ------------------------------------------------


@pytest.mark.parametrize("family", list(MEMORY))
def test_memory_kind_comes_from_the_architecture(families: dict[str, Path], family: str) -> None:
    m = Model(families[family])
    try:
        assert m.memory_kind is MEMORY[family]
        ctx = Context(m, n_ctx=64, n_threads=1)
        assert ctx.memory is MEMORY[family]
        ctx.close()
    finally:
        m.close()


def test_engine_allocates_one_sequence_on_recurrent_memory(engines: dict[str, Engine]) -> None:
    """A recurrent context holds a whole state per sequence and cannot run a tree: one;
    hybrids and attention keep the tree's branch sequences."""
    for family, eng in engines.items():
        gen = eng.generator
        assert gen is not None
        want = 1 if MEMORY[family] is MemoryKind.RECURRENT else 17
        assert gen.ctx.n_seq_max == want, family


# -- the mirror itself ---------------------------------------------------------------------


def _kv(model: Model, n_ctx: int = 256) -> KVCache:
    return KVCache(Context(model, n_ctx=n_ctx, n_threads=1, n_seq_max=1, kv_unified=True))


def _close_to_fresh(kv: KVCache, model: Model, token: int = 77) -> float:
    got = logits_after(kv, token)
    want = fresh_logits(model, [*kv.tokens, token])
    return float(np.max(np.abs(got - want)))


@pytest.mark.parametrize("family", RECURRENT_FAMILIES)
def test_cuts_restore_checkpoints_and_replay(families: dict[str, Path], family: str) -> None:
    """Cuts to every kind of point: at a checkpoint, past it (replay), below every
    checkpoint (from scratch); the logits after each equal a fresh prefill's."""
    model = Model(families[family])
    kv = _kv(model)
    try:
        kv.feed(TOKENS[:40])
        kv.checkpoint()
        kv.feed(TOKENS[40:47], "all")  # a verify batch of 7
        kv.cut(43)  # 3 of 7 kept: restore at 40, replay 3
        assert kv.tokens == TOKENS[:43]
        assert kv.costs.restores >= 1 and kv.costs.replayed == 3
        assert _close_to_fresh(kv, model) < 1e-3
        kv.feed(TOKENS[43:50])
        kv.cut(20)  # below every checkpoint: from scratch
        assert kv.tokens == TOKENS[:20] and kv.costs.from_scratch >= 1
        assert kv.ctx.pos_max(0) == 19
        assert _close_to_fresh(kv, model) < 1e-3
        kv.feed(TOKENS[20:30])
        kv.checkpoint("anchor")
        kv.feed(TOKENS[30:35])
        assert kv.reuse([*TOKENS[:33], 5, 6]) == 30  # reuse stops at the checkpoint: no replay
        assert kv.ctx.pos_max(0) == 29
        assert _close_to_fresh(kv, model) < 1e-3
    finally:
        kv.ctx.close()
        kv.close()
        model.close()


@pytest.mark.parametrize("family", ["qwen35", "lfm2", "granitehybrid"])
def test_a_failing_restore_fails_closed(families: dict[str, Path], family: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint llama.cpp refuses: CutFailed, and the cache is empty (mirror and
    memory agree), never a mirror over a state it does not describe."""
    model = Model(families[family])
    kv = _kv(model)
    try:
        kv.feed(TOKENS[:30])
        kv.checkpoint()
        kv.feed(TOKENS[30:34], "all")
        monkeypatch.setattr(Context, "state_load", lambda *a: False)
        with pytest.raises(CutFailed, match="could not be cut back exactly"):
            kv.cut(31)
        assert kv.tokens == [] and kv.ctx.pos_max(0) == -1
    finally:
        kv.ctx.close()
        kv.close()
        model.close()


# -- replies: every family x mode equals the target alone -----------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", list(MEMORY))
def test_greedy_equals_the_target_alone(engines: dict[str, Engine], refs: dict[str, FreshTarget],
                                        family: str, mode: str) -> None:
    """Two replies in one engine (the second reuses the first's prefix): both equal the
    target's own greedy replies, the draft did propose, and the mirrors hold."""
    eng = engines[family]
    spec = SpecConfig(mode=Mode(mode), draft_max=4, draft_first_token=True)
    params = SamplingParams(max_tokens=40)
    eng.generator.reset()  # type: ignore[union-attr]
    msgs = [{"role": "user", "content": PROMPT}]
    prompt = eng.tokenize_chat(msgs)
    done, _ = run(eng, prompt, params, spec)
    assert done.stop_reason is not StopReason.ERROR, done.message
    assert done.token_ids == greedy_reference(refs[family], prompt, len(done.token_ids) + 1)[: len(done.token_ids)]
    assert len(done.token_ids) == 40 or done.stop_reason is StopReason.EOS
    _mirror_true(eng)
    if mode in ("chain", "tree"):
        assert done.stats.drafted > 0 and done.stats.accepted < done.stats.drafted, \
            "the draft must be partly right for the cut to matter"
    msgs += [{"role": "assistant", "content": done.text}, {"role": "user", "content": "and the speed"}]
    prompt2 = eng.tokenize_chat(msgs)
    done2, _ = run(eng, prompt2, params, spec)
    assert done2.stop_reason is not StopReason.ERROR, done2.message
    want2 = greedy_reference(refs[family], prompt2, 40)
    assert done2.token_ids == want2[: len(done2.token_ids)]
    assert done2.stats.prefill_tokens <= len(prompt2) - len(prompt) + 1, "the first prompt is reused"
    _mirror_true(eng)
    if mode == "tree" and MEMORY[family] is MemoryKind.RECURRENT:
        assert done2.stats.trees_as_chains
    if mode == "tree" and MEMORY[family] is MemoryKind.HYBRID:
        assert not done2.stats.trees_as_chains  # a hybrid verifies real trees


@pytest.mark.parametrize("mode", ["chain", "tree", "adaptive"])
@pytest.mark.parametrize("family", RECURRENT_FAMILIES)
def test_coupled_seed_gives_plains_text(engines: dict[str, Engine], family: str, mode: str) -> None:
    """Under the coupled rule a reply is a function of the seed and the target alone."""
    eng = engines[family]
    params = SamplingParams(temperature=0.9, top_k=40, seed=7, max_tokens=40, rule=Rule.COUPLED)
    prompt = eng.tokenize_chat([{"role": "user", "content": PROMPT}])
    eng.generator.reset()  # type: ignore[union-attr]
    plain, _ = run(eng, prompt, params, SpecConfig(mode=Mode.PLAIN))
    eng.generator.reset()  # type: ignore[union-attr]
    spec = SpecConfig(mode=Mode(mode), draft_max=4, draft_first_token=True)
    with fake_clock():  # adaptive's choices depend on measured times: made deterministic
        done, _ = run(eng, prompt, params, spec)
    assert done.token_ids == plain.token_ids
    assert done.stats.drafted > 0 or mode == "adaptive"
    _mirror_true(eng)


@pytest.mark.parametrize("family", RECURRENT_FAMILIES)
def test_a_reply_after_a_cut_near_a_full_context(families: dict[str, Path], refs: dict[str, FreshTarget],
                                                 family: str) -> None:
    """The window fills mid-reply (a proposal that does not fit runs plain, then the reply
    stops); the next reply, after a cut back into that full cache, is still the target's."""
    eng = Engine(EngineOptions(n_ctx=128, n_threads=1, calibrate=False))
    try:
        eng.load_target(families[family])
        eng.load_draft(families[family + "-draft"])
        motif = eng.tokenize_chat([{"role": "user", "content": PROMPT}])[1:]
        prompt = [0, *(motif * 8)][: eng.n_ctx - 12]  # leaves 12 cells: the window fills
        spec = SpecConfig(mode=Mode.CHAIN, draft_max=4, draft_first_token=True)
        done, _ = run(eng, prompt, SamplingParams(max_tokens=200), spec)
        assert done.stop_reason in (StopReason.CONTEXT_FULL, StopReason.EOS), done.message
        assert done.token_ids == greedy_reference(refs[family], prompt, len(done.token_ids))
        _mirror_true(eng)
        shorter = prompt[:-6] + prompt[-3:]  # an edit near the end: a cut deep into the cache
        done2, _ = run(eng, shorter, SamplingParams(max_tokens=20), spec)
        assert done2.stop_reason is not StopReason.ERROR, done2.message
        assert done2.token_ids == greedy_reference(refs[family], shorter, 20)[: len(done2.token_ids)]
        _mirror_true(eng)
    finally:
        eng.close()


@pytest.mark.parametrize("mode", ["chain", "tree", "adaptive"])
def test_a_recurrent_draft_for_an_attention_target(tiny: dict[str, Path], families: dict[str, Path],
                                                   mode: str) -> None:
    """A mamba draft for the llama target (same tokenizer): its own mirror is cut by
    restores (its context has one sequence, so a tree request is served as a chain), and
    two replies stay the target's greedy ones."""
    eng = Engine(EngineOptions(n_ctx=512, n_threads=1, calibrate=False))
    ref = FreshTarget(tiny["target"])
    try:
        eng.load_target(tiny["target"])
        eng.load_draft(families["mamba"])
        gen = eng.generator
        assert gen is not None and gen.draft_model is not None and gen.draft_model.ctx.n_seq_max == 1
        spec = SpecConfig(mode=Mode(mode), draft_max=4, draft_first_token=True)
        for text in (PROMPT, "the code and the model"):
            prompt = eng.tokenize_chat([{"role": "user", "content": text}])
            with fake_clock():
                done, _ = run(eng, prompt, SamplingParams(max_tokens=30), spec)
            assert done.stop_reason is not StopReason.ERROR, done.message
            assert done.token_ids == greedy_reference(ref, prompt, 30)[: len(done.token_ids)]
            assert done.stats.trees_as_chains is (mode in ("tree", "adaptive"))  # both ask for trees
            _mirror_true(eng)
    finally:
        ref.close()
        eng.close()


def test_a_cut_that_cannot_be_made_exact_stops_the_reply(engines: dict[str, Engine],
                                                          refs: dict[str, FreshTarget],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: the reply stops with the reason, and the next reply is exact."""
    eng = engines["qwen35"]
    prompt = eng.tokenize_chat([{"role": "user", "content": PROMPT}])
    spec = SpecConfig(mode=Mode.CHAIN, draft_max=4, draft_first_token=True)
    eng.generator.reset()  # type: ignore[union-attr]
    with monkeypatch.context() as m:
        m.setattr(Context, "state_load", lambda *a: False)
        done, _ = run(eng, prompt, SamplingParams(max_tokens=40), spec)
    assert done.stop_reason is StopReason.ERROR
    assert "could not be cut back exactly" in done.message
    _mirror_true(eng)
    done2, _ = run(eng, prompt, SamplingParams(max_tokens=40), spec)
    assert done2.token_ids == greedy_reference(refs["qwen35"], prompt, 40)[: len(done2.token_ids)]


def test_costs_are_in_the_stats(engines: dict[str, Engine]) -> None:
    """A hybrid target's reply reports its checkpoints (bytes, time) and replayed tokens;
    an attention target's reports none."""
    params = SamplingParams(max_tokens=40)
    spec = SpecConfig(mode=Mode.CHAIN, draft_max=4, draft_first_token=True)
    for family in ("qwen35", "qwen3moe"):
        eng = engines[family]
        eng.generator.reset()  # type: ignore[union-attr]
        done, _ = run(eng, eng.tokenize_chat([{"role": "user", "content": PROMPT}]), params, spec)
        s = done.stats
        assert s.memory == MEMORY[family].value
        if MEMORY[family] is MemoryKind.ATTENTION:
            assert s.checkpoints == s.replayed_tokens == 0
        else:
            assert s.checkpoints > 0 and s.checkpoint_bytes_each > 0 and s.checkpoint_s > 0
            assert s.restores > 0 and s.replayed_tokens > 0
            assert s.draft_checkpoints > 0


# -- power: the old cut and a trusted snapshot rollback must fail these checks -------------


def _old_drop_from(self: KVCache, n: int) -> None:
    """The cut before kv.py knew its memory: clear what refuses a partial removal, go on."""
    if self.ctx.seq_rm(0, n, -1):
        del self.tokens[n:]
        self._agreed = min(self._agreed, n)
    else:
        self.clear()


def _patch_old_mirror(m: pytest.MonkeyPatch) -> None:
    """Every cache (those already open too) cuts as the old mirror did: seq_rm trusted,
    cleared when refused, no checkpoint, no invariant check."""
    m.setattr(KVCache, "exact_cut", property(lambda self: True, lambda self, v: None), raising=False)
    m.setattr(KVCache, "_drop_from", _old_drop_from)
    m.setattr(KVCache, "_check", lambda self, what: None)


@pytest.mark.parametrize("family", ["qwen35", "lfm2", "mamba"])
def test_power_the_old_clear_and_continue_cut_fails_the_checks(
        engines: dict[str, Engine], refs: dict[str, FreshTarget], family: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        _patch_old_mirror(m)
        with pytest.raises(AssertionError):
            test_greedy_equals_the_target_alone(engines, refs, family, "chain")
    engines[family].generator.reset()  # type: ignore[union-attr]


@pytest.mark.parametrize("family", ["qwen35", "lfm2"])
def test_power_a_snapshot_rollback_trusted_beyond_the_last_decode_fails(
        families: dict[str, Path], refs: dict[str, FreshTarget], family: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With n_rs_seq snapshots llama.cpp's seq_rm answers true for a rollback of up to
    n_rs_seq tokens, but the state is right only for a rollback shorter than the last
    decode. Trusted like an attention cut, a reply after a short plain one (single-token
    decodes, then the same prompt again: a rollback of the whole short reply) is wrong."""
    real_init = Context.__init__

    def with_snapshots(self: Context, *a: object, **kw: object) -> None:
        kw["n_rs_seq"] = 8
        real_init(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Context, "__init__", with_snapshots)
    _patch_old_mirror(monkeypatch)
    eng = Engine(EngineOptions(n_ctx=256, n_threads=1, calibrate=False))
    try:
        eng.load_target(families[family])
        eng.load_draft(families[family + "-draft"])
        prompt = eng.tokenize_chat([{"role": "user", "content": PROMPT}])
        want = greedy_reference(refs[family], prompt, 20)
        spec = SpecConfig(mode=Mode.CHAIN, draft_max=4, draft_first_token=True)
        wrong = 0
        for n in (3, 5, 7):
            first, _ = run(eng, prompt, SamplingParams(max_tokens=n), SpecConfig(mode=Mode.PLAIN))
            assert first.token_ids == want[:n]  # single-token decodes: nothing was cut yet
            done, _ = run(eng, prompt, SamplingParams(max_tokens=20), spec)
            wrong += done.token_ids != want[: len(done.token_ids)]
        assert wrong > 0, "a trusted snapshot rollback went unnoticed"
    finally:
        eng.close()


# -- rejection sampling on a hybrid: the joint law of the first tokens ---------------------

TOPK5 = Transform(temperature=0.8, top_k=5)


@pytest.fixture(scope="module")
def qwen35_pair(families: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(families["qwen35"], families["qwen35-draft"])
    yield eng
    eng.close()


def test_rejection_sampling_keeps_a_hybrid_targets_distribution(qwen35_pair: Engine,
                                                                 refs: dict[str, FreshTarget]) -> None:
    """k=2 chains over 4 tokens on qwen35 (gated delta net + attention): replies take
    several steps, each partly rejected step restores a checkpoint and replays, and the
    first 4 tokens still follow the target's own law (chi-square against the reference)."""
    res = check("qwen35 rejection chain k=2, 4 tokens, top-k 5", qwen35_pair, refs["qwen35"],
                prompt_of(qwen35_pair), TOPK5, 4, spec("chain", draft_max=2), 1000)
    assert res.p > ALPHA_PASS
    assert 0.2 < res.tally.acceptance < 0.9, "the draft must be partly right"
    assert res.tally.max_accepted == 2


@pytest.mark.slow
def test_slow_tree_on_a_hybrid_keeps_the_distribution(qwen35_pair: Engine,
                                                      refs: dict[str, FreshTarget]) -> None:
    """Trees on a hybrid target commit the winning path by restore and replay."""
    res = check("qwen35 tree depth 2, sample-and-match", qwen35_pair, refs["qwen35"],
                prompt_of(qwen35_pair), TOPK5, 4, spec("tree", draft_max=2, tree_budget=6, tree_width=2),
                3000)
    assert res.p > ALPHA_PASS
    assert res.tally.max_accepted == 2
