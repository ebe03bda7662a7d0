"""GPU layer settings: describe, resolve auto, and the memory split for a layer count."""

from __future__ import annotations

from specula.core import gpu_layers
from specula.core.engine.native.devices import GGMLDevice
from specula.core.gguf.model_info import ModelInfo
from specula.core.hardware import fit, offload

GiB = 1024**3


def gpu(free: int) -> GGMLDevice:
    return GGMLDevice(1, "CUDA0", "test card", "gpu", "CUDA", free, free)


def test_describe() -> None:
    assert gpu_layers.describe(gpu_layers.AUTO) == "auto"
    assert gpu_layers.describe(0, 29) == "CPU only"
    assert gpu_layers.describe(12, 29) == "12 / 29 layers"
    assert gpu_layers.describe(-1, 29) == "all (29 / 29 layers)"


def test_resolve_keeps_numbers_and_plans_auto(qwen7b: ModelInfo) -> None:
    assert offload.resolve(7, qwen7b, 4096, devices=[]) == 7
    assert offload.resolve(gpu_layers.AUTO, qwen7b, 4096, devices=[]) == 0  # no GPU
    big = offload.resolve(gpu_layers.AUTO, qwen7b, 4096, devices=[gpu(200 * GiB)])
    assert big == (qwen7b.n_layers or 0) + 1  # everything fits


def test_split_adds_up_and_follows_the_layers(qwen7b: ModelInfo) -> None:
    mem = fit.model_memory(qwen7b, 4096)
    total = (qwen7b.n_layers or 0) + 1
    none = offload.split(qwen7b, 4096, 0)
    assert (none.vram, none.ram) == (0, mem.total)
    every = offload.split(qwen7b, 4096, -1)
    assert every.layers == total and every.ram <= 1 and every.vram >= mem.total - 1
    half = offload.split(qwen7b, 4096, total // 2)
    expected_vram = int(total // 2 * (mem.weights + mem.kv_cache) / total) + mem.compute
    assert half.vram == expected_vram and half.vram + half.ram == mem.total
