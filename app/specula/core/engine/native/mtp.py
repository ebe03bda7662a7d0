"""The native side of MTP (a target's own multi-token-prediction layers, "NextN").

llama.cpp runs an MTP head as a second context over the target's own weights
(``ctx_type = LLAMA_CONTEXT_TYPE_MTP``, ``ctx_other`` = the target's context), fed
with the extended batch API: each entry a token, its position and one hidden row
of the target (``llama_batch_ext_set_embd_token``). The calls that are not in
llama.h proper (``llama_set_embeddings_nextn``, ``llama_get_embeddings_nextn_ith``)
come from ``llama_cpp.llama_cpp_ext``, which llama-cpp-python marks unstable: every
one is looked up once here, and a build without them has no MTP (``available()``
says why) instead of failing mid-reply.

The one way to crash the process: an MTP context over weights loaded without
``load_mtp`` (GGML_ASSERT in the architecture's graph). :class:`MTPContext` takes
only a :class:`~specula.core.engine.native.llama.Model` that says it loaded them.
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp as L
import numpy as np
import numpy.typing as npt

from specula.core.engine.native.context import Context, ExtBatchOwner, ext_batch
from specula.core.engine.native.llama import DecodeError, LoadError, MemoryKind, Model
from specula.core.gguf.memory_kind import MTP_ARCHS

F32 = npt.NDArray[np.float32]

LLAMA_CONTEXT_TYPE_MTP = 1
LLAMA_PROCESS_TYPE_DECODE = int(L.LLAMA_PROCESS_TYPE_DECODE)  # (ENCODE is 0)

_ext: Any = None
_missing = ""


def _bind() -> str:
    """Look the unstable calls up once; "" when all are there, else what is missing."""
    global _ext, _missing
    if _ext is not None or _missing:
        return _missing
    try:
        from llama_cpp import llama_cpp_ext as ext

        for name in ("llama_set_embeddings_nextn", "llama_get_embeddings_nextn",
                     "llama_get_embeddings_nextn_ith"):
            getattr(ext, name)
        for name in ("llama_model_n_layer_nextn", "llama_batch_ext_init", "llama_process",
                     "llama_batch_ext_set_embd_token", "llama_model_n_embd_out"):
            getattr(L, name)
        L.llama_model_params().load_mtp  # noqa: B018 - the field exists in this build
        L.llama_context_params().ctx_type  # noqa: B018
    except (ImportError, AttributeError) as exc:
        _missing = f"this llama-cpp-python build has no MTP support ({exc})"
        return _missing
    _ext = ext
    return ""


def available() -> str:
    """"" when this llama-cpp-python can run MTP heads, else why not."""
    return _bind()


def nextn_layers(model: Model) -> int:
    """MTP layers the model file declares (counted even when they were not loaded)."""
    if _bind():
        return 0
    return max(0, int(L.llama_model_n_layer_nextn(model.ptr)))


def has_mtp_graph(architecture: str | None) -> bool:
    """Whether llama.cpp builds an MTP graph for this architecture (memory_kind.MTP_ARCHS)."""
    return (architecture or "") in MTP_ARCHS


def set_target_rows(target: Context, on: bool) -> None:
    """Whether every target decode keeps the hidden row of every token (what the MTP
    head is fed); off costs nothing, on copies n_tokens x n_embd floats per decode."""
    if not _bind():
        _ext.llama_set_embeddings_nextn(target.ptr, on, False)


class MTPContext(ExtBatchOwner):
    """An MTP context beside a target context, with one reusable extended batch.

    Positions, tokens and rows go in through :meth:`decode`; logits come out of the
    wrapped :class:`Context` (``ctx.logits``), the head's own next row out of
    :meth:`row`. Only sequence 0 is used.
    """

    def __init__(self, model: Model, target: Context, *, n_batch: int) -> None:
        why = _bind()
        if why:
            raise LoadError(why)
        if not model.mtp_loaded:
            # the pitfall: a graph over MTP tensors that were never loaded aborts
            raise LoadError(f"{model.path}: the MTP layers were not loaded")
        self.n_embd = int(L.llama_model_n_embd_out(model.ptr))
        self.ctx = Context(model, n_ctx=target.n_ctx, n_threads=target.n_threads,
                           n_batch=n_batch, n_seq_max=1, n_outputs_max=4,
                           ctx_type=LLAMA_CONTEXT_TYPE_MTP, ctx_other=target)
        # llama.cpp gives an MTP context a plain attention cache over the NextN layers only
        # (llama-model.cpp, create_memory), whatever the trunk's memory: a cut is a seq_rm
        self.ctx.memory = MemoryKind.ATTENTION
        _ext.llama_set_embeddings_nextn(self.ctx.ptr, True, True)
        self._batch, self._pos, self._embd = ext_batch(self.ctx, "the MTP batch")
        self._embd.n_embd = self.n_embd

    @property
    def n_ctx(self) -> int:
        return self.ctx.n_ctx

    def decode(self, tokens: list[int], pos0: int, rows: F32, *, logits: bool = True) -> float:
        """Evaluate ``tokens`` at ``pos0..``, token i with hidden row ``rows[i]``; with
        ``logits``, the logits and the head's next row of the last one. Returns seconds."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        n = len(tokens)
        if rows.shape != (n, self.n_embd) or rows.dtype != np.float32 or not rows.flags.c_contiguous:
            raise ValueError(f"rows must be float32 ({n}, {self.n_embd}), got {rows.dtype} {rows.shape}")
        if not self.ctx.ptr:
            raise DecodeError("decode on a closed MTP context")
        b = self._batch
        L.llama_batch_ext_clear(b)
        base = rows.ctypes.data
        stride = self.n_embd * 4
        for i, tok in enumerate(tokens):
            idx = L.llama_batch_ext_add_token(b, 0, int(tok))
            if idx < 0:
                raise DecodeError(f"MTP batch refused token {i} ({idx})")
            self._pos.value = pos0 + i
            self._embd.data = ctypes.cast(base + i * stride, ctypes.POINTER(ctypes.c_float))
            if not (L.llama_batch_ext_set_pos(b, idx, ctypes.byref(self._pos))
                    and L.llama_batch_ext_set_embd_token(b, idx, self._embd)
                    and L.llama_batch_ext_set_output_logits(b, idx, logits and i == n - 1)):
                raise DecodeError("MTP batch entry refused")
        return self.ctx.process(LLAMA_PROCESS_TYPE_DECODE, b, "MTP")

    def row(self) -> F32:
        """A copy of the head's hidden row for the last decoded token (the next step's input)."""
        ptr = _ext.llama_get_embeddings_nextn_ith(self.ctx.ptr, -1)
        if not ptr:
            raise DecodeError("the MTP head returned no hidden row")
        out: F32 = np.array(np.ctypeslib.as_array(ptr, shape=(self.n_embd,)), dtype=np.float32)
        return out


def target_rows(target: Context, n: int, n_embd: int) -> F32 | None:
    """A copy of the hidden rows of the last target decode's ``n`` tokens (batch order),
    or None when the target kept none (rows are off, or the decode had no tokens)."""
    if _bind() or n <= 0:
        return None
    ptr = _ext.llama_get_embeddings_nextn(target.ptr)  # unmasked: one row per batch entry
    if not ptr:
        return None
    out: F32 = np.array(np.ctypeslib.as_array(ptr, shape=(n, n_embd)), dtype=np.float32)
    return out
