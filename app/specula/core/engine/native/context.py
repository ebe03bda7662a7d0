"""One llama.cpp context: a KV cache over a :class:`~specula.core.engine.native.llama.Model`,
decoding batches, its logits read as zero-copy views, and the sequence operations the
KV mirror (kv.py) uses."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import llama_cpp as L
import numpy as np

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.handle import NativeHandle
from specula.core.engine.native.llama import (
    F32,
    ContextFull,
    DecodeError,
    LoadError,
    MemoryKind,
    Model,
)
from specula.core.engine.native.load_log import LoadLog

# llama_get_logits_ith returning the address as an int: a view of the row is then made
# once per address (ctypes' pointer, .contents and from_address cost ~5 us per call right
# after a decode). A private function object, so llama_cpp's own binding is unchanged.
_logits_address = L.llama_cpp._lib["llama_get_logits_ith"]
_logits_address.argtypes = [ctypes.c_void_p, ctypes.c_int32]
_logits_address.restype = ctypes.c_void_p

_PARTIAL = L.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY


class Context(NativeHandle):
    """One KV cache over a :class:`Model`; decode, logits, sequence operations."""

    def __init__(
        self,
        model: Model,
        *,
        n_ctx: int,
        n_threads: int,
        n_batch: int = 512,
        n_seq_max: int = 1,
        n_outputs_max: int = 64,
        kv_unified: bool = False,
        n_rs_seq: int = 0,
        ctx_type: int = 0,
        ctx_other: Context | None = None,
    ) -> None:
        """``n_rs_seq``: llama.cpp's recurrent snapshots per sequence; the engine keeps 0
        (see kv.py for why), the tests set it to show what trusting them would do.
        ``ctx_type``/``ctx_other``: an MTP context beside its target's (see mtp_native)."""
        self.model = model
        p = L.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_batch = n_batch
        p.n_ubatch = n_batch
        p.n_seq_max = n_seq_max
        p.n_threads = n_threads
        p.n_threads_batch = n_threads
        p.n_outputs_max = n_outputs_max
        p.kv_unified = kv_unified
        p.n_rs_seq = n_rs_seq
        p.no_perf = True
        p.flash_attn_type = -1  # LLAMA_FLASH_ATTN_TYPE_AUTO
        if ctx_type:
            p.ctx_type = ctx_type
        if ctx_other is not None:
            p.ctx_other = ctx_other.ptr
        if model.closed:
            raise LoadError(f"{model.path}: the model is closed")
        with LoadLog() as load_log:
            self._ctx = L.llama_init_from_model(model.ptr, p)
        if not self._ctx:
            reason = load_log.reason()
            raise LoadError(
                f"{model.path}: could not create a context of {n_ctx} tokens: {reason}" if reason
                else f"{model.path}: could not create a context of {n_ctx} tokens "
                "(not enough memory?)", reason)
        model._context_opened()
        self.n_ctx: int = int(L.llama_n_ctx(self._ctx))
        # llama.cpp caps n_batch at n_ctx (and n_ubatch at n_batch): read back what it
        # uses, since a batch larger than that aborts the process (GGML_ASSERT).
        self.n_batch: int = min(int(L.llama_n_batch(self._ctx)), int(L.llama_n_ubatch(self._ctx)))
        self.n_seq_max: int = int(L.llama_n_seq_max(self._ctx))
        self.n_outputs_max = n_outputs_max
        self.n_threads = n_threads
        self.n_vocab = model.n_vocab
        self._row_type = ctypes.c_float * self.n_vocab  # one logits row, made once
        self._rows: dict[int, F32] = {}  # address -> read-only view of the row there
        self._mem = L.llama_get_memory(self._ctx)
        # What the memory can undo (see MemoryKind); n_rs_seq stays 0 (llama.cpp's default):
        # its snapshot rollback is exact only for one rollback shorter than the last decode,
        # so the KV mirror never relies on it (kv.py says why).
        self.memory: MemoryKind = model.memory_kind
        # Seconds inside llama_decode over the context's life: every decode passes here,
        # so the time outside it (the host's share of a step) is measured in one place.
        self.decode_s = 0.0
        # Called with each batch right after it decoded (llama.cpp's process() hook): a
        # drafter that reads the target's hidden rows (MTP) takes them here, before the
        # next decode overwrites them.
        self.observers: list[Callable[[Batch], None]] = []

    @property
    def ptr(self) -> Any:
        """The llama_context pointer (None once closed)."""
        return self._ctx

    def decode(self, batch: Batch) -> float:
        """Evaluate ``batch``; returns its seconds in llama_decode, the very figure added to
        ``decode_s`` (so a step's verify is never more than the decodes its host time
        leaves out); raises :class:`ContextFull` or :class:`DecodeError`."""
        if not self._ctx:
            raise DecodeError("decode on a closed context")
        if batch.n_outputs > self.n_outputs_max:
            # llama.cpp aborts the whole process past n_outputs_max: refuse in Python.
            raise DecodeError(f"batch asks for {batch.n_outputs} outputs, max {self.n_outputs_max}")
        t0 = time.perf_counter()
        rc = L.llama_decode(self._ctx, batch.raw)
        if rc == 0:  # a GPU backend returns before the graph is done: wait here, not in
            L.llama_synchronize(self._ctx)  # the first logits read (host time otherwise)
        spent = time.perf_counter() - t0
        self.decode_s += spent
        if rc == 1:
            raise ContextFull("no KV slot for the batch")
        if rc != 0:
            raise DecodeError(f"llama_decode returned {rc}")
        for observe in self.observers:
            observe(batch)
        return spent

    def process(self, kind: int, batch: Any, what: str) -> float:
        """Run an extension batch (``llama_process``: a head's or the MTP layers' own
        context, no observers) and wait for it; its seconds are added to ``decode_s`` as
        :meth:`decode`'s are. ``what`` names the batch in the errors."""
        t0 = time.perf_counter()
        rc = L.llama_process(self._ctx, kind, batch)
        if rc == 0:
            L.llama_synchronize(self._ctx)
        spent = time.perf_counter() - t0
        self.decode_s += spent
        if rc == 1:
            raise ContextFull(f"no KV slot for the {what} batch")
        if rc != 0:
            raise DecodeError(f"llama_process ({what}) returned {rc}")
        return spent

    def logits(self, i: int) -> F32:
        """Zero-copy, read-only view of the i-th output's logits (valid until the next decode)."""
        if not self._ctx:
            raise DecodeError("logits of a closed context")
        addr = _logits_address(self._ctx, i)
        if not addr:
            raise DecodeError(f"no logits for output {i}")
        row = self._rows.get(addr)
        if row is None:  # a row of llama.cpp's output buffer not seen before
            if len(self._rows) > 4 * self.n_outputs_max:  # the buffer moved (grew): forget
                self._rows.clear()
            buf: Any = self._row_type.from_address(addr)
            row = np.frombuffer(buf, dtype=np.float32)
            row.flags.writeable = False  # llama.cpp's buffer: only a decode writes it
            self._rows[addr] = row
        # a new array object per call (a view, no copy): a selection remembered for one
        # row object (topk.top_k_ids) must not be handed out for the next decode's row
        out: F32 = row.view()
        return out

    # The memory calls check first: after close the pointer is dangling, and a clean-up
    # that runs late (a reply's ``finally`` at garbage collection) must get an error,
    # not a crash inside llama.cpp.
    def _memory(self) -> Any:
        if not self._ctx:
            raise DecodeError("KV operation on a closed context")
        return self._mem

    def seq_rm(self, seq: int, p0: int, p1: int = -1) -> bool:
        return bool(L.llama_memory_seq_rm(self._memory(), seq, p0, p1))

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        L.llama_memory_seq_cp(self._memory(), src, dst, p0, p1)

    def seq_keep(self, seq: int) -> None:
        L.llama_memory_seq_keep(self._memory(), seq)

    def pos_max(self, seq: int = 0) -> int:
        return int(L.llama_memory_seq_pos_max(self._memory(), seq))

    def clear(self) -> None:
        L.llama_memory_clear(self._memory(), True)

    # -- checkpoints of the part of the memory a seq_rm cannot cut (recurrent state) ----

    def state_size(self, seq: int = 0) -> int:
        """Bytes of ``seq``'s recurrent state (``PARTIAL_ONLY``: a hybrid's attention
        cells are left out, they are cut with seq_rm instead)."""
        if not self._ctx:
            raise DecodeError("state of a closed context")
        return int(L.llama_state_seq_get_size_ext(self._ctx, seq, _PARTIAL))

    def state_save(self, seq: int, buf: Any) -> int:
        """Copy ``seq``'s recurrent state into ``buf`` (a ctypes uint8 array of at least
        :meth:`state_size` bytes); returns the bytes written, 0 on failure."""
        if not self._ctx:
            raise DecodeError("state of a closed context")
        return int(L.llama_state_seq_get_data_ext(self._ctx, buf, len(buf), seq, _PARTIAL))

    def state_load(self, seq: int, buf: Any, size: int) -> bool:
        """Put ``size`` bytes saved by :meth:`state_save` back as ``seq``'s recurrent state;
        False when llama.cpp refused them (the sequence is then empty)."""
        if not self._ctx:
            raise DecodeError("state of a closed context")
        return int(L.llama_state_seq_set_data_ext(self._ctx, buf, size, seq, _PARTIAL)) == size

    def close(self) -> None:
        if getattr(self, "_ctx", None):
            L.llama_free(self._ctx)
            self._ctx = None
            self._mem = None
            self.model._context_closed()


def ext_batch(ctx: Context, what: str) -> tuple[Any, ctypes.c_int32, Any]:
    """An extension batch for ``ctx`` (a head's or the MTP layers' context), with the
    position and one-row embedding holders its entries are set through; ``ctx`` is
    closed and :class:`LoadError` raised, naming ``what``, when llama.cpp gives none."""
    batch = L.llama_batch_ext_init(ctx.ptr)
    if not batch:
        ctx.close()
        raise LoadError(f"{ctx.model.path}: could not allocate {what}")
    embd = L.llama_embd()
    embd.n_rows = 1
    return batch, ctypes.c_int32(0), embd


class ExtBatchOwner(NativeHandle):
    """A context of its own with an extension batch (a head's, the MTP layers'): closing
    frees the batch, then the context (either may be missing after a failed open)."""

    ctx: Context
    _batch: Any

    def close(self) -> None:
        if getattr(self, "_batch", None):
            L.llama_batch_ext_free(self._batch)
            self._batch = None
        if getattr(self, "ctx", None) is not None:
            self.ctx.close()
