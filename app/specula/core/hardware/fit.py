"""Will a target (and its draft) fit in this machine's memory? A plain verdict with numbers.

Why an estimate before loading: loading a model that does not fit either fails
after a long wait or swaps the machine to a crawl. The parts llama.cpp
allocates are predictable from the GGUF header: the weights (the file size),
the KV cache of each model (2 x attention layers x context x KV heads x head
size x the cache type's bytes), the recurrent state of recurrent and hybrid
models (a fixed size per sequence, whatever the context: llama.cpp's
memory_recurrent keeps one conv and one SSM state per layer and sequence, in
f32), a compute buffer (the logits of one micro-batch plus activations; with
flash attention off, also the attention scores), and, for a target with MTP
layers run as its own draft, the MTP context (the NextN layers' KV cache and
a second compute buffer). Free RAM
comes from psutil; free GPU memory is passed in by the caller (the hardware
module detects devices), so this stays testable and backend-neutral.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import Enum

import psutil

from specula.core.gguf.memory_kind import MTP_ARCHS, MemoryKind
from specula.core.gguf.model_info import ModelInfo
from specula.core.sizes import byte_size

GiB = 1024**3
MiB = 1024**2
# Bytes per cached element for llama.cpp's --cache-type-k/-v choices (block size 32).
CACHE_TYPE_BYTES: dict[str, float] = {
    "f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q5_1": 24 / 32,
    "q5_0": 22 / 32, "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32,
}
MODEL_OVERHEAD = 64 * MiB  # context, graph and backend bookkeeping per loaded model
RAM_RESERVE = 512 * MiB  # what the OS and the app itself keep using
GPU_USABLE = 0.9  # drivers and fragmentation keep the last tenth of VRAM
DEFAULT_CTX = 4096


class FitVerdict(str, Enum):
    GPU = "fits on GPU"
    PARTIAL = "partially offloaded"
    CPU = "CPU only"
    NO = "does not fit"


@dataclass
class ModelMemory:
    """The memory one loaded model needs, in bytes."""

    name: str
    weights: int
    kv_cache: int
    compute: int
    n_layers: int | None
    recurrent: int = 0  # recurrent state of every sequence (0 on attention-only models)
    mtp: int = 0  # the MTP context beside the model's own (0 when MTP is not used)

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute + self.recurrent + self.mtp

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "total": self.total}


def _cache_elem_bytes(cache_type: str) -> float:
    per_elem = CACHE_TYPE_BYTES.get(cache_type.lower())
    if per_elem is None:
        raise ValueError(f"unknown cache type {cache_type!r} (one of {', '.join(CACHE_TYPE_BYTES)})")
    return per_elem


def kv_cache_bytes(info: ModelInfo, n_ctx: int, cache_type: str = "f16",
                   layers: int | None = None) -> int:
    """K and V caches for ``n_ctx`` tokens: 2 x layers x ctx x KV heads x head size x bytes.

    ``layers`` defaults to the layers that hold a KV cache: the attention layers of
    the trunk (none on a pure recurrent model; MTP layers live in the MTP context).
    """
    per_elem = _cache_elem_bytes(cache_type)
    if layers is None:
        layers = info.trunk_layers or 0
        if info.memory in (MemoryKind.RECURRENT, MemoryKind.HYBRID) and (
                info.attention_layers is not None):
            layers = info.attention_layers
    kv_width = (info.n_head_kv or 0) * (info.head_dim or 0)
    if not kv_width and info.n_embd:
        kv_width = info.n_embd  # no head counts: assume full multi-head attention
    return int(2 * layers * n_ctx * kv_width * per_elem)


def compute_buffer_bytes(info: ModelInfo, n_ctx: int, n_ubatch: int = 512,
                         flash_attn: bool = True) -> int:
    """Scratch memory for one micro-batch: logits and activations (+ attention scores without FA)."""
    n_ubatch = min(n_ubatch, n_ctx)
    vocab = info.vocab_size or 0
    embd = info.n_embd or 0
    total = n_ubatch * (vocab + 8 * embd) * 4
    if not flash_attn:
        total += (info.n_head or 0) * n_ctx * n_ubatch * 4
    return total + MODEL_OVERHEAD


def recurrent_state_bytes(info: ModelInfo, n_seq: int = 1, n_rs_seq: int = 0) -> int:
    """The recurrent state llama.cpp allocates: per sequence, per recurrent layer, the conv
    and SSM states in f32, times ``1 + n_rs_seq`` rollback snapshots (0 on attention models)."""
    if n_seq < 1 or n_rs_seq < 0:
        raise ValueError("n_seq must be at least 1 and n_rs_seq at least 0")
    return (info.recurrent_state_bytes or 0) * n_seq * (1 + n_rs_seq)


def has_mtp_draft(info: ModelInfo) -> bool:
    """True when llama.cpp can draft with the model's own NextN layers."""
    return bool(info.nextn_layers) and info.architecture in MTP_ARCHS


def mtp_context_bytes(info: ModelInfo, n_ctx: int, cache_type: str = "f16",
                      flash_attn: bool = True) -> int:
    """The MTP context: the NextN layers' KV cache for ``n_ctx`` tokens and its own compute
    buffer (0 when the model has no MTP layers llama.cpp can run)."""
    if not has_mtp_draft(info):
        return 0
    return (kv_cache_bytes(info, n_ctx, cache_type, layers=info.nextn_layers)
            + compute_buffer_bytes(info, n_ctx, flash_attn=flash_attn))


def model_memory(info: ModelInfo, n_ctx: int, cache_type: str = "f16",
                 weights: int | None = None, flash_attn: bool = True, *,
                 n_seq: int = 1, mtp: bool = False) -> ModelMemory:
    """One model's memory; ``n_seq`` sequences of recurrent state, the MTP context when ``mtp``."""
    return ModelMemory(
        info.display_name,
        weights if weights is not None else (info.file_size or 0),
        kv_cache_bytes(info, n_ctx, cache_type),
        compute_buffer_bytes(info, n_ctx, flash_attn=flash_attn),
        info.n_layers,
        recurrent_state_bytes(info, n_seq),
        mtp_context_bytes(info, n_ctx, cache_type, flash_attn) if mtp else 0,
    )


def available_ram() -> int:
    return int(psutil.virtual_memory().available)


@dataclass
class FitEstimate:
    verdict: FitVerdict
    target: ModelMemory
    draft: ModelMemory | None
    n_ctx: int
    cache_type: str
    ram_available: int
    gpu_free: list[int]
    gpu_layers: int | None  # target layers to offload (n_gpu_layers) when partially offloaded
    message: str

    @property
    def total(self) -> int:
        return self.target.total + (self.draft.total if self.draft else 0)

    def to_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict.value, "message": self.message, "total": self.total,
            "n_ctx": self.n_ctx, "cache_type": self.cache_type,
            "ram_available": self.ram_available, "gpu_free": self.gpu_free,
            "gpu_layers": self.gpu_layers, "target": self.target.to_dict(),
            "draft": self.draft.to_dict() if self.draft else None,
        }


def estimate(target: ModelInfo, draft: ModelInfo | None = None, *, n_ctx: int | None = None,
             cache_type: str = "f16", target_weights: int | None = None,
             draft_weights: int | None = None, ram_available: int | None = None,
             gpu_free: Sequence[int] | None = None, flash_attn: bool = True,
             n_seq: int = 1) -> FitEstimate:
    """The verdict for loading ``target`` (and ``draft``) at ``n_ctx`` tokens of context.

    ``gpu_free`` lists free bytes per GPU of the active backend (empty or None: CPU
    backend). ``ram_available`` defaults to what psutil reports now. ``n_seq``: the
    sequences each context holds (each one a full recurrent state on recurrent and
    hybrid models). Without a draft model, a target with MTP layers drafts with them,
    so its MTP context is counted.
    """
    ctx = n_ctx or min(target.context_length or DEFAULT_CTX, DEFAULT_CTX)
    if ctx <= 0:
        raise ValueError("the context length must be positive")
    t = model_memory(target, ctx, cache_type, target_weights, flash_attn, n_seq=n_seq,
                     mtp=draft is None)
    d = (model_memory(draft, ctx, cache_type, draft_weights, flash_attn, n_seq=n_seq)
         if draft else None)
    ram = available_ram() if ram_available is None else ram_available
    gpus = [int(g) for g in (gpu_free or []) if g > 0]
    total = t.total + (d.total if d else 0)
    ram_usable = max(ram - RAM_RESERVE, 0)
    gpu_usable = int(sum(gpus) * GPU_USABLE)
    what = "target and draft need" if d else "the model needs"

    def result(verdict: FitVerdict, message: str, layers: int | None = None) -> FitEstimate:
        return FitEstimate(verdict, t, d, ctx, cache_type, ram, gpus, layers, message)

    if gpus and total <= gpu_usable:
        return result(FitVerdict.GPU, f"Fits on the GPU: {what} {byte_size(total)}, "
                      f"{byte_size(gpu_usable)} of VRAM is usable.", t.n_layers)
    if gpus:
        # The draft runs every step: keep it and the compute buffers on the GPU, then
        # as many target layers as the rest of the VRAM holds.
        fixed = t.compute + t.mtp + (d.total if d else 0)
        layers = t.n_layers or 0
        per_layer = (t.weights + t.kv_cache + t.recurrent) / layers if layers else float("inf")
        on_gpu = int(max(gpu_usable - fixed, 0) // per_layer) if layers else 0
        on_gpu = min(on_gpu, layers)
        in_ram = total - (fixed if on_gpu else 0) - int(on_gpu * per_layer) if layers else total
        if on_gpu and in_ram <= ram_usable:
            return result(FitVerdict.PARTIAL,
                          f"Partially offloaded: {on_gpu} of {layers} target layers on the GPU "
                          f"({byte_size(gpu_usable)} usable), {byte_size(in_ram)} in RAM "
                          f"({byte_size(ram_usable)} available).", on_gpu)
    if total <= ram_usable:
        why = "the GPU is too small, " if gpus else ""
        return result(FitVerdict.CPU, f"CPU only: {why}{what} {byte_size(total)}, "
                      f"{byte_size(ram_usable)} of RAM is available.", 0 if gpus else None)
    vram = f" + {byte_size(gpu_usable)} of VRAM" if gpus else ""
    return result(FitVerdict.NO, f"Does not fit: {what} {byte_size(total)}, only "
                  f"{byte_size(ram_usable)} of RAM{vram} is available; try a smaller quantization "
                  "or a shorter context.")


def format_estimate(est: FitEstimate) -> str:
    """The text `specula models fit` prints."""
    lines = [f"verdict: {est.verdict.value}", f"  {est.message}",
             f"  context {est.n_ctx} tokens, KV cache type {est.cache_type}"]
    for role, m in (("target", est.target), ("draft", est.draft)):
        if m is None:
            continue
        extra = (f", recurrent state {byte_size(m.recurrent)}" if m.recurrent else "") + (
            f", MTP context {byte_size(m.mtp)}" if m.mtp else "")
        lines.append(f"  {role:<6} {m.name}: weights {byte_size(m.weights)}, KV cache {byte_size(m.kv_cache)}"
                     f"{extra}, compute {byte_size(m.compute)} = {byte_size(m.total)}")
    gpu = ", ".join(byte_size(g) for g in est.gpu_free) or "none"
    lines.append(f"  free: RAM {byte_size(est.ram_available)}, GPU {gpu}")
    return "\n".join(lines)
