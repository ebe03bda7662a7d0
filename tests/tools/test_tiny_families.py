"""The tiny model families load in llama.cpp, decode, and are what they claim to be.

llama.cpp itself is the independent judge here: ``llama_model_is_recurrent`` /
``llama_model_is_hybrid`` / ``llama_model_n_layer_nextn`` for what each file is,
and the size of a sequence's recurrent state as llama.cpp saves it
(``llama_state_seq_get_size_ext`` with ``PARTIAL_ONLY``) for the header's state size.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import llama_cpp as L
import numpy as np
import pytest

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import Model
from specula.core.gguf.memory_kind import MemoryKind
from specula.core.gguf.model_info import read_model_info
from specula_tools.tiny_families import FAMILIES, build_qwen35_mtp
from tests.core.engine.conftest import closing_all, fresh_logits

KEYS = sorted(FAMILIES)
PROMPT = [0, 104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100]  # BOS "hello world"
PARTIAL_ONLY = 1  # LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY (llama.h)


@pytest.fixture(scope="module")
def models(families: dict[str, Path]) -> Iterator[dict[str, Model]]:
    with closing_all({k: Model(p) for k, p in families.items()}) as loaded:
        yield loaded


def _greedy(model: Model, prompt: list[int], n: int) -> tuple[list[int], list[np.ndarray]]:
    """``n`` greedy tokens decoded one at a time after a one-batch prefill."""
    ctx = Context(model, n_ctx=256, n_threads=1)
    b = Batch(256)
    b.fill(prompt, 0, outputs="last")
    ctx.decode(b)
    out: list[int] = []
    rows: list[np.ndarray] = []
    for i in range(n):
        row = ctx.logits(-1).copy()
        rows.append(row)
        out.append(int(np.argmax(row)))
        b.fill([out[-1]], len(prompt) + i, outputs="last")
        ctx.decode(b)
    ctx.close()
    return out, rows


def _fresh_logits(model: Model, tokens: list[int]) -> np.ndarray:
    return fresh_logits(model, tokens, n_ctx=256, n_threads=1)


@pytest.mark.parametrize("family", KEYS)
def test_llama_cpp_says_what_each_family_is(models: dict[str, Model], family: str) -> None:
    fam = FAMILIES[family]
    for key in (family, f"{family}-draft"):
        m = models[key]
        assert m.meta("general.architecture") == fam.arch
        assert bool(L.llama_model_is_recurrent(m.ptr)) is (fam.memory == "recurrent")
        assert bool(L.llama_model_is_hybrid(m.ptr)) is (fam.memory == "hybrid")
        assert int(L.llama_model_n_layer_nextn(m.ptr)) == fam.nextn
        assert m.n_vocab == 398  # the tiny tokenizer of specula_tools.tiny_models


@pytest.mark.parametrize("family", KEYS)
def test_header_memory_kind_agrees_with_llama_cpp(families: dict[str, Path],
                                                  models: dict[str, Model], family: str) -> None:
    info = read_model_info(families[family])
    m = models[family]
    expected = (MemoryKind.RECURRENT if L.llama_model_is_recurrent(m.ptr) else
                MemoryKind.HYBRID if L.llama_model_is_hybrid(m.ptr) else MemoryKind.ATTENTION)
    assert info.memory is expected
    assert (info.nextn_layers or 0) == int(L.llama_model_n_layer_nextn(m.ptr))


@pytest.mark.parametrize("family", KEYS)
def test_each_family_decodes_consistently(models: dict[str, Model], family: str) -> None:
    """Token by token equals a fresh one-batch prefill (the state carries over exactly), the
    logits are finite, and greedy decoding does not collapse onto one token."""
    m = models[family]
    tokens, rows = _greedy(m, PROMPT, 12)
    assert all(np.isfinite(r).all() for r in rows)
    assert len(set(tokens)) >= 3, tokens
    for i in (0, 5, 11):
        fresh = _fresh_logits(m, PROMPT + tokens[:i])
        assert int(np.argmax(fresh)) == tokens[i]
        assert np.allclose(fresh, rows[i], atol=1e-2)  # batch shapes: float noise


@pytest.mark.parametrize("family", KEYS)
def test_the_draft_agrees_often_but_not_always(models: dict[str, Model], family: str) -> None:
    """Teacher-forced on the target's greedy reply, the noisy copy picks the same token at
    most positions and a different one at some: drafts are accepted and rejected."""
    target, draft = models[family], models[f"{family}-draft"]
    tokens, _rows = _greedy(target, PROMPT, 40)
    ctx = Context(draft, n_ctx=256, n_threads=1)
    b = Batch(256)
    b.fill(PROMPT + tokens, 0, outputs="all")
    ctx.decode(b)
    base = len(PROMPT) - 1
    agree = sum(int(np.argmax(ctx.logits(base + i))) == tokens[i] for i in range(len(tokens)))
    ctx.close()
    print(f"[{family}] draft agrees on {agree}/{len(tokens)}")
    assert 0.5 * len(tokens) <= agree < len(tokens)


def test_mtp_trunk_at_full_gain_is_the_hybrid(models: dict[str, Model], tmp_path: Path) -> None:
    """qwen35-mtp draws qwen35's weights: at full gain it is qwen35 plus one NextN layer that
    the main pass does not run; at its default gain the trunk differs (weaker blocks)."""
    full = Model(build_qwen35_mtp(tmp_path / "full.gguf", out_gain=1.0))
    try:
        a = _fresh_logits(models["qwen35"], PROMPT)
        assert np.array_equal(a, _fresh_logits(full, PROMPT))
        assert not np.array_equal(a, _fresh_logits(models["qwen35-mtp"], PROMPT))
    finally:
        full.close()


def test_mtp_layer_loads(families: dict[str, Path]) -> None:
    """With ``load_mtp`` the NextN tensors load too (llama.cpp skips them otherwise)."""
    from specula.core.engine.native.backend import ensure_backend

    ensure_backend()
    params = L.llama_model_default_params()
    params.load_mtp = True
    ptr = L.llama_model_load_from_file(str(families["qwen35-mtp"]).encode(), params)
    assert ptr
    try:
        assert int(L.llama_model_n_layer_nextn(ptr)) == 1
        assert int(L.llama_model_n_params(ptr)) > 0
    finally:
        L.llama_model_free(ptr)


@pytest.mark.parametrize("family", [k for k in KEYS if FAMILIES[k].memory != "attention"])
def test_header_state_size_is_llama_cpps(families: dict[str, Path], models: dict[str, Model],
                                         family: str) -> None:
    """The recurrent state the header promises is what llama.cpp saves for a sequence
    (its partial state: the recurrent part only, plus a few bytes of bookkeeping)."""
    info = read_model_info(families[family])
    assert info.recurrent_state_bytes
    ctx = Context(models[family], n_ctx=256, n_threads=1)
    b = Batch(256)
    b.fill(PROMPT, 0, outputs="last")
    ctx.decode(b)
    raw = ctx._ctx  # the llama_context pointer (test-only access)
    size = int(L.llama_state_seq_get_size_ext(raw, 0, PARTIAL_ONLY))
    ctx.close()
    print(f"[{family}] header {info.recurrent_state_bytes} B, llama.cpp partial state {size} B")
    assert info.recurrent_state_bytes <= size < info.recurrent_state_bytes + 256
    assert ctypes.sizeof(ctypes.c_float) == 4


def _mtp_guesses(path: Path, n: int = 60) -> int:
    """Teacher-forced: at how many of the target's ``n`` greedy positions the NextN head's
    argmax is the target's next token. The MTP context is fed what llama.cpp's
    draft-mtp feeds it (common/speculative.cpp): token k with the target's hidden row k-1."""
    from llama_cpp import llama_cpp_ext as X

    from specula.core.engine.native.backend import ensure_backend

    ensure_backend()
    mp = L.llama_model_default_params()
    mp.load_mtp = True
    model = L.llama_model_load_from_file(str(path).encode(), mp)
    assert model
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    n_embd = L.llama_model_n_embd(model)
    ref = Model(path)
    seq = PROMPT + _greedy(ref, PROMPT, n)[0]
    ref.close()

    def params(mtp_of: object = None) -> object:
        cp = L.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = 256
        cp.n_threads = cp.n_threads_batch = 1
        if mtp_of is not None:
            cp.ctx_type, cp.ctx_other, cp.n_rs_seq = L.LLAMA_CONTEXT_TYPE_MTP, mtp_of, 0
        return cp

    tgt = L.llama_init_from_model(model, params())
    X.llama_set_embeddings_nextn(tgt, True, False)
    arr = (L.llama_token * len(seq))(*seq)
    assert L.llama_decode(tgt, L.llama_batch_get_one(arr, len(seq))) == 0
    hidden = np.ctypeslib.as_array(X.llama_get_embeddings_nextn(tgt), shape=(len(seq), n_embd)).copy()
    mtp = L.llama_init_from_model(model, params(tgt))
    X.llama_set_embeddings_nextn(mtp, True, True)
    batch = L.llama_batch_ext_init(mtp)
    rows = [np.zeros(n_embd, dtype=np.float32), *hidden[:-1]]
    for k, token in enumerate(seq):
        idx = L.llama_batch_ext_add_token(batch, 0, token)
        pos = L.llama_pos(k)
        L.llama_batch_ext_set_pos(batch, idx, ctypes.byref(pos))
        row = rows[k]
        L.llama_batch_ext_set_embd_token(batch, idx, L.llama_embd(
            row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1, n_embd))
        L.llama_batch_ext_set_output_logits(batch, idx, True)
    assert L.llama_process(mtp, L.LLAMA_PROCESS_TYPE_DECODE, batch) == 0
    hits = 0
    for k in range(len(PROMPT) - 1, len(seq) - 1):
        logits = np.ctypeslib.as_array(L.llama_get_logits_ith(mtp, k), shape=(n_vocab,))
        hits += int(np.argmax(logits)) == seq[k + 1]
    L.llama_batch_ext_free(batch)
    L.llama_free(mtp)
    L.llama_free(tgt)
    L.llama_model_free(model)
    return hits


def test_the_mtp_head_guesses_often_but_not_always(families: dict[str, Path], tmp_path: Path) -> None:
    """The NextN head of qwen35-mtp agrees with the target at a fair share of positions, so an
    MTP draft is accepted and rejected; a head without the embedding pass-through almost never."""
    hits = _mtp_guesses(families["qwen35-mtp"])
    blind = _mtp_guesses(build_qwen35_mtp(tmp_path / "blind.gguf", mtp_align=0.0))
    print(f"[qwen35-mtp] MTP head guesses {hits}/60 (without the pass-through: {blind}/60)")
    assert 15 <= hits < 60
    assert blind <= 5
