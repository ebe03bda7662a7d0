"""What this machine and this llama.cpp build can run on, and where to put each model.

Backends come from ggml's device registry (CUDA, Metal, Vulkan, CPU and any
registered RPC workers, with free and total memory), so the answer is about
the llama.cpp that is actually installed, not about the hardware in theory: a
CPU-only wheel on a machine with an NVIDIA card reports CPU. RAM and cores come
from psutil.

:func:`plan_offload` decides GPU layers when the user leaves them on ``auto``:
the draft runs at every step, several times per target step, so it goes on the
GPU first and whole; the target gets what is left (:mod:`specula.core.hardware.fit`
does the arithmetic). RPC workers take target layers only: a network round
trip per draft token would cost more than the draft saves.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import psutil

from specula.core.engine.native.devices import GGMLDevice, list_devices, rpc_supported
from specula.core.gguf.model_info import ModelInfo
from specula.core.hardware import fit
from specula.core.sizes import byte_size

__all__ = [
    "GGMLDevice",
    "SystemReport",
    "describe_system",
    "format_system",
    "gpu_free_bytes",
    "list_devices",
    "plan_offload",
]


@dataclass
class SystemReport:
    backend: str  # what models offload to: CUDA, Metal, Vulkan or CPU
    gpu_offload: bool  # llama_supports_gpu_offload()
    rpc: bool  # this build can use remote workers
    devices: list[GGMLDevice]
    system_info: str  # llama_print_system_info(): compiled-in CPU features and backends
    llama_cpp_python: str
    os: str
    cpu: str
    physical_cores: int
    logical_cores: int
    default_threads: int
    ram_total: int
    ram_available: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["devices"] = [asdict(dev) for dev in self.devices]
        return d


def gpu_free_bytes(include_remote: bool = False) -> list[int]:
    """Free bytes per local GPU (and RPC worker with ``include_remote``); [] on CPU builds."""
    return [d.memory_free for d in list_devices()
            if d.is_gpu and (include_remote or not d.is_remote)]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_system() -> SystemReport:
    import llama_cpp as L

    from specula.core.engine.native.backend import backend_name, default_threads

    devices = list_devices()
    vm = psutil.virtual_memory()
    notes = []
    if not any(d.is_gpu and not d.is_remote for d in devices):
        notes.append("No GPU backend in this llama.cpp build: models run on the CPU. "
                     "See the README to install with CUDA, Metal or Vulkan.")
    return SystemReport(
        backend=backend_name(),
        gpu_offload=bool(L.llama_supports_gpu_offload()),
        rpc=rpc_supported(),
        devices=devices,
        system_info=L.llama_print_system_info().decode(errors="replace").strip(),
        llama_cpp_python=getattr(L, "__version__", "?"),
        os=f"{platform.system()} {platform.release()} ({platform.machine()})",
        cpu=_cpu_name(),
        physical_cores=psutil.cpu_count(logical=False) or 0,
        logical_cores=psutil.cpu_count(logical=True) or 0,
        default_threads=default_threads(),
        ram_total=int(vm.total),
        ram_available=int(vm.available),
        notes=notes,
    )


def format_system(report: SystemReport | None = None) -> str:
    """The text `specula info --system` prints."""
    r = report or describe_system()
    local_gpu = any(d.is_gpu and not d.is_remote for d in r.devices)
    offload = "yes" if local_gpu else ("RPC workers only" if r.gpu_offload else "no")
    lines = [
        f"backend: {r.backend} (GPU offload: {offload}, "
        f"RPC workers: {'supported' if r.rpc else 'not in this build'})",
        f"llama-cpp-python {r.llama_cpp_python}; {r.os}",
        f"CPU: {r.cpu}, {r.physical_cores} physical / {r.logical_cores} logical cores "
        f"(default threads: {r.default_threads})",
        f"RAM: {byte_size(r.ram_available)} available of {byte_size(r.ram_total)}",
        "devices:",
    ]
    for d in r.devices:
        mem = f"{byte_size(d.memory_free)} free of {byte_size(d.memory_total)}" if d.memory_total else "memory ?"
        lines.append(f"  [{d.index}] {d.name:<8} {d.type:<5} {d.backend:<8} {d.description} ({mem})")
    if not r.devices:
        lines.append("  none reported")
    lines.append(f"llama.cpp: {r.system_info}")
    lines.extend(f"note: {n}" for n in r.notes)
    return "\n".join(lines)


def _all_layers(info: ModelInfo) -> int:
    """n_gpu_layers that offloads every block plus the output layer."""
    return (info.n_layers or 0) + 1


def plan_offload(target_info: ModelInfo, draft_info: ModelInfo | None, n_ctx: int,
                 devices: Sequence[GGMLDevice] | None = None) -> tuple[int, int]:
    """``(draft_layers, target_layers)`` for llama.cpp's n_gpu_layers.

    The draft goes whole onto the local GPUs if it fits (else as many of its
    layers as fit, and the target stays on the CPU); the target then gets as
    many layers as the rest of the VRAM holds. With RPC workers registered,
    every target layer is offloaded and llama.cpp splits them over the workers
    and local GPUs by free memory. No GPU and no worker: ``(0, 0)``.
    """
    devs = list(devices) if devices is not None else list_devices()
    local = [d.memory_free for d in devs if d.is_gpu and not d.is_remote and d.memory_free > 0]
    remote = any(d.is_gpu and d.is_remote for d in devs)
    budget = int(sum(local) * fit.GPU_USABLE)
    draft_layers = 0
    if draft_info is not None and budget > 0:
        dm = fit.model_memory(draft_info, n_ctx)
        if dm.total <= budget:
            draft_layers = _all_layers(draft_info)
        else:
            per_layer = (dm.weights + dm.kv_cache) / max(draft_info.n_layers or 1, 1)
            draft_layers = max(int((budget - dm.compute) // per_layer), 0)
            return min(draft_layers, _all_layers(draft_info)), (
                _all_layers(target_info) if remote else 0)
    if remote:
        return draft_layers, _all_layers(target_info)
    if budget <= 0:
        return draft_layers, 0
    est = fit.estimate(target_info, draft_info if draft_layers else None, n_ctx=n_ctx,
                       gpu_free=local, ram_available=1 << 62)
    if est.verdict is fit.FitVerdict.GPU:
        return draft_layers, _all_layers(target_info)
    if est.verdict is fit.FitVerdict.PARTIAL and est.gpu_layers:
        return draft_layers, int(est.gpu_layers)
    return draft_layers, 0
