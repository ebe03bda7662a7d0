"""Fit estimates: KV cache arithmetic and the four verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.hardware.fit import (
    FitVerdict,
    GiB,
    MiB,
    estimate,
    format_estimate,
    kv_cache_bytes,
)


def test_kv_cache_matches_llama_cpp(qwen7b: ModelInfo) -> None:
    # llama.cpp prints "KV self size = 1792.00 MiB" for this model at 32k context, f16.
    assert kv_cache_bytes(qwen7b, 32768, "f16") == 1792 * MiB
    assert kv_cache_bytes(qwen7b, 32768, "q8_0") == 952 * MiB
    assert kv_cache_bytes(qwen7b, 4096, "f16") == 224 * MiB
    with pytest.raises(ValueError, match="unknown cache type"):
        kv_cache_bytes(qwen7b, 4096, "q3")


def test_fits_on_gpu(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    est = estimate(qwen7b, qwen05b, n_ctx=8192, gpu_free=[24 * GiB], ram_available=32 * GiB)
    assert est.verdict is FitVerdict.GPU and est.gpu_layers == 28
    assert est.total == est.target.total + (est.draft.total if est.draft else 0)
    assert est.target.weights == qwen7b.file_size
    assert est.target.kv_cache == 448 * MiB and est.draft is not None
    assert "Fits on the GPU" in est.message
    assert "verdict: fits on GPU" in format_estimate(est)


def test_partially_offloaded(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    est = estimate(qwen7b, qwen05b, n_ctx=8192, gpu_free=[4 * GiB], ram_available=32 * GiB)
    assert est.verdict is FitVerdict.PARTIAL
    assert est.gpu_layers is not None and 0 < est.gpu_layers < 28
    assert f"{est.gpu_layers} of 28 target layers" in est.message
    more = estimate(qwen7b, qwen05b, n_ctx=8192, gpu_free=[3 * GiB, 3 * GiB],
                    ram_available=32 * GiB)
    assert more.gpu_layers is not None and more.gpu_layers > est.gpu_layers


def test_cpu_only_and_does_not_fit(qwen7b: ModelInfo) -> None:
    cpu = estimate(qwen7b, n_ctx=4096, ram_available=16 * GiB)
    assert cpu.verdict is FitVerdict.CPU and cpu.gpu_layers is None
    tiny_gpu = estimate(qwen7b, n_ctx=4096, gpu_free=[100 * MiB], ram_available=16 * GiB)
    assert tiny_gpu.verdict is FitVerdict.CPU and "GPU is too small" in tiny_gpu.message
    no = estimate(qwen7b, n_ctx=32768, ram_available=4 * GiB)
    assert no.verdict is FitVerdict.NO and "Does not fit" in no.message
    # A longer context, a bigger KV cache: the same model stops fitting.
    edge = cpu.total + 512 * MiB + 1
    assert estimate(qwen7b, n_ctx=4096, ram_available=edge).verdict is FitVerdict.CPU
    assert estimate(qwen7b, n_ctx=32768, ram_available=edge).verdict is FitVerdict.NO


def test_defaults_use_this_machine(tiny: dict[str, Path]) -> None:
    info = read_model_info(tiny["target"])
    est = estimate(info)
    assert est.ram_available > 0 and est.n_ctx == min(info.context_length or 4096, 4096)
    assert est.verdict is FitVerdict.CPU  # a few hundred KB fit anywhere
    assert est.to_dict()["verdict"] == "CPU only"
