"""Fit estimates for recurrent, hybrid and MTP models: the state per sequence, the KV cache
of attention layers only, the MTP context.

Expected bytes are written out from the tiny builders' shapes (see
tests/core/gguf/test_memory_kind.py for the state sizes), not from fit.py.
"""

from __future__ import annotations

from pathlib import Path

from specula.core.gguf.model_info import read_model_info
from specula.core.hardware.fit import (
    MODEL_OVERHEAD,
    GiB,
    estimate,
    format_estimate,
    kv_cache_bytes,
    model_memory,
)

F16 = 2
MAMBA_STATE = 2 * (3 * 128 + 16 * 128) * 4  # 2 layers, f32
QWEN35_STATE = 3 * (3 * (64 + 2 * 2 * 16) + 16 * 64) * 4  # 3 gated delta net layers, f32
VOCAB, EMBD = 398, 64


def _compute(n_ctx: int) -> int:
    """One micro-batch of logits and activations (the rule fit.py documents), f32."""
    return min(512, n_ctx) * (VOCAB + 8 * EMBD) * 4 + MODEL_OVERHEAD


def test_recurrent_model_has_a_state_per_sequence_and_no_kv(families: dict[str, Path]) -> None:
    mamba = read_model_info(families["mamba"])
    for n_ctx in (512, 4096):
        m = model_memory(mamba, n_ctx)
        assert m.kv_cache == 0  # no attention layer: nothing grows with the context
        assert m.recurrent == MAMBA_STATE
    assert model_memory(mamba, 4096, n_seq=17).recurrent == 17 * MAMBA_STATE
    est = estimate(mamba, n_ctx=4096, n_seq=4, ram_available=8 * GiB)
    assert est.target.recurrent == 4 * MAMBA_STATE
    assert est.total == est.target.weights + _compute(4096) + 4 * MAMBA_STATE


def test_hybrid_kv_counts_attention_layers_only(families: dict[str, Path]) -> None:
    qwen35 = read_model_info(families["qwen35"])
    # one attention layer of four: 2 (K and V) x ctx x 2 KV heads x head size 16, f16
    assert kv_cache_bytes(qwen35, 4096) == 2 * 1 * 4096 * 2 * 16 * F16
    granite = read_model_info(families["granitehybrid"])
    assert kv_cache_bytes(granite, 1000) == 2 * 1 * 1000 * 2 * 16 * F16
    m = model_memory(qwen35, 4096, n_seq=2)
    assert m.recurrent == 2 * QWEN35_STATE and m.mtp == 0


def test_attention_model_unchanged(tiny: dict[str, Path], families: dict[str, Path]) -> None:
    llama = read_model_info(tiny["target"])
    assert kv_cache_bytes(llama, 2048) == 2 * 2 * 2048 * 2 * 16 * F16  # both layers
    assert model_memory(llama, 2048, n_seq=17).recurrent == 0
    moe = read_model_info(families["qwen3moe"])
    assert kv_cache_bytes(moe, 2048) == 2 * 2 * 2048 * 2 * 16 * F16


def test_mtp_context_counted_when_it_drafts(families: dict[str, Path]) -> None:
    mtp = read_model_info(families["qwen35-mtp"])
    plain = read_model_info(families["qwen35"])
    n_ctx = 4096
    # The MTP context: the NextN layer's KV cache (one attention block) and its own compute buffer.
    mtp_ctx = 2 * 1 * n_ctx * 2 * 16 * F16 + _compute(n_ctx)
    alone = estimate(mtp, n_ctx=n_ctx, ram_available=8 * GiB)
    assert alone.target.mtp == mtp_ctx
    # The trunk's KV cache leaves the NextN layer out: it lives in the MTP context.
    assert alone.target.kv_cache == kv_cache_bytes(plain, n_ctx) == 2 * 1 * n_ctx * 2 * 16 * F16
    assert alone.target.recurrent == QWEN35_STATE
    text = format_estimate(alone)
    assert "MTP context" in text and "recurrent state" in text
    with_draft = estimate(mtp, plain, n_ctx=n_ctx, ram_available=8 * GiB)
    assert with_draft.target.mtp == 0  # a draft model drafts; the MTP context is not made
    assert estimate(plain, n_ctx=n_ctx, ram_available=8 * GiB).target.mtp == 0
    assert "MTP context" not in format_estimate(with_draft)


def test_recurrent_state_can_decide_the_verdict(families: dict[str, Path]) -> None:
    # The state of 17 sequences is what tips a model over the edge of the GPU.
    mamba = read_model_info(families["mamba"])
    one = estimate(mamba, n_ctx=512, gpu_free=[1], ram_available=8 * GiB)
    room = int((one.total + 8 * MAMBA_STATE) / 0.9) + 1  # GPU_USABLE of the free bytes
    assert estimate(mamba, n_ctx=512, gpu_free=[room], ram_available=8 * GiB,
                    n_seq=9).verdict.value == "fits on GPU"
    assert estimate(mamba, n_ctx=512, gpu_free=[room], ram_available=8 * GiB,
                    n_seq=17).verdict.value != "fits on GPU"
