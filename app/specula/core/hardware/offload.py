"""GPU layers for one load: resolve "auto", and what a chosen layer count puts where.

The desktop app loads the target and the draft one after the other, so
"auto" is resolved per load from the GPU memory free at that moment: as many
of the model's layers as fit (:func:`plan_offload` with the model alone).
The command line, which knows both files up front, plans the pair together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specula.core.gguf.model_info import ModelInfo
from specula.core.gpu_layers import ALL, AUTO
from specula.core.hardware import fit
from specula.core.hardware.system import GGMLDevice, plan_offload


def total_layers(info: ModelInfo) -> int:
    """llama.cpp's n_gpu_layers that offloads everything: every block and the output layer."""
    return (info.n_layers or 0) + 1


def resolve(setting: int, info: ModelInfo, n_ctx: int,
            devices: Sequence[GGMLDevice] | None = None) -> int:
    """The n_gpu_layers to load ``info`` with; ``AUTO`` becomes what the free VRAM holds."""
    if setting != AUTO:
        return setting
    return plan_offload(info, None, n_ctx, devices)[1]


@dataclass(frozen=True)
class Split:
    """Where one model's memory goes with a given number of offloaded layers."""

    layers: int  # offloaded, clamped to 0..total
    total: int
    vram: int  # bytes on the GPU
    ram: int  # bytes in system memory


def split(info: ModelInfo, n_ctx: int, layers: int) -> Split:
    """Bytes on the GPU and in RAM when ``layers`` of ``info``'s layers are offloaded.

    Weights and KV cache are spread evenly over the blocks (the estimate the fit
    verdict uses); the compute buffer goes with the offloaded part when any is.
    """
    total = total_layers(info)
    n = total if layers == ALL else max(min(layers, total), 0)
    mem = fit.model_memory(info, n_ctx)
    per_layer = (mem.weights + mem.kv_cache) / total if total else 0.0
    vram = int(n * per_layer) + (mem.compute if n else 0)
    return Split(n, total, vram, max(mem.total - vram, 0))


def resolve_for_file(setting: int, path: str, n_ctx: int) -> int:
    """:func:`resolve` for a GGUF file; 0 when its header cannot be read (the load says why)."""
    if setting != AUTO:
        return setting
    from specula.core.gguf.model_info import GGUFError, read_model_info

    try:
        info = read_model_info(path)
    except (GGUFError, OSError):
        return 0
    return resolve(AUTO, info, n_ctx)
