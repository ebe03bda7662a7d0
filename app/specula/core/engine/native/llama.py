"""A thin, fast wrapper over llama-cpp-python's ctypes API.

Why not ``llama_cpp.Llama``: its generate loop cannot verify a draft with
rejection sampling, and its draft-model path allocates n_ctx x n_vocab floats.
Here a :class:`Model` owns the weights, a :class:`Context` owns one KV cache,
a :class:`~specula.core.engine.native.batch.Batch` (its own file) is a reusable llama_batch
whose arrays are numpy views, and logits are read as zero-copy views.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import llama_cpp as L
import numpy as np
import numpy.typing as npt

from specula.core.cancel import Cancelled
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.handle import NativeHandle

log = logging.getLogger("specula.engine")

F32 = npt.NDArray[np.float32]

_init_lock = threading.Lock()
_backend_ready = False
_log_callback: Any = None  # keep the ctypes callback alive for the process lifetime


class LoadError(RuntimeError):
    """A model file llama.cpp could not load; the message says which and why."""



class DecodeError(RuntimeError):
    """llama_decode failed for a reason other than a full context."""


class ContextFull(RuntimeError):
    """No room left in the KV cache for the next batch."""


class MemoryKind(str, Enum):
    """What a model's memory can undo, which decides how a rejected suffix is cut.

    llama.cpp creates the memory from the architecture (``llm_arch_is_recurrent`` /
    ``llm_arch_is_hybrid`` in llama-model.cpp), and the same tables answer
    ``llama_model_is_recurrent`` / ``llama_model_is_hybrid``: those two calls say which
    memory a context over the model gets, no probe decode needed.
    """

    ATTENTION = "attention"  # a KV cache: a partial seq_rm is exact
    RECURRENT = "recurrent"  # mamba, mamba2, rwkv: one state per sequence, no partial seq_rm
    HYBRID = "hybrid"  # attention layers + recurrent layers (qwen35, granitehybrid, lfm2, ...)

    @property
    def cuts_exactly(self) -> bool:
        """Whether ``seq_rm(seq, p, -1)`` removes a suffix exactly (else: checkpoints)."""
        return self is MemoryKind.ATTENTION

    @property
    def runs_trees(self) -> bool:
        """Whether one decode can hold a token tree (a token in several sequences):
        llama.cpp refuses such a batch on pure recurrent memory."""
        return self is not MemoryKind.RECURRENT


def ensure_backend() -> None:
    """Initialise llama.cpp once and route its log into Python logging."""
    global _backend_ready, _log_callback
    with _init_lock:
        if _backend_ready:
            return
        L.llama_backend_init()

        @L.llama_log_callback  # type: ignore[untyped-decorator]
        def _on_log(level: int, text: bytes, _user: Any) -> None:
            # GGML_LOG_LEVEL: 2 info, 3 warn, 4 error; llama.cpp is chatty at info, so info
            # goes to DEBUG (where device placement, "model buffer size" etc. can be read).
            if not text or (level < 3 and not log.isEnabledFor(logging.DEBUG)):
                return
            msg = text.decode("utf-8", errors="replace").rstrip()
            if msg:
                lvl = logging.ERROR if level >= 4 else logging.WARNING if level == 3 else logging.DEBUG
                log.log(lvl, "llama.cpp: %s", msg)

        _log_callback = _on_log
        L.llama_log_set(_log_callback, ctypes.c_void_p(0))
        _backend_ready = True


def backend_name() -> str:
    """'CUDA', 'Metal', 'Vulkan' or 'CPU': what this llama.cpp build offloads to."""
    ensure_backend()
    info = L.llama_print_system_info().decode(errors="replace")
    for name, key in (("CUDA", "CUDA"), ("Metal", "METAL"), ("Vulkan", "VULKAN")):
        if key in info.upper() and L.llama_supports_gpu_offload():
            return name
    return "CPU"


_UNQUANTIZED = {"F32", "F16", "BF16"}


def extra_buffers_safe(quantization: str | None = None) -> bool:
    """Whether llama.cpp's CPU "extra buffer types" (AMX, weight repacking) may be used.

    Measured on a virtual machine whose /proc/cpuinfo advertises AMX: with the
    extra buffers, the first decode of a Q4_K_M model dies with a general
    protection fault inside libggml-cpu, while an F16 model runs 2-3x faster
    than without them. So they stay on for unquantized weights and go off for
    quantized ones where AMX is advertised. ``SPECULA_CPU_EXTRA_BUFFERS=0/1``
    forces the choice.
    """
    forced = os.environ.get("SPECULA_CPU_EXTRA_BUFFERS")
    if forced is not None:
        return forced.strip() not in ("0", "false", "no", "off")
    if quantization is not None and quantization.upper() in _UNQUANTIZED:
        return True
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "amx_tile" not in line.split()
    except OSError:
        pass
    return True


def default_threads() -> int:
    """Physical cores: llama.cpp's decode does not gain from SMT siblings."""
    import psutil

    return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)


class Model(NativeHandle):
    """Weights and vocabulary of one GGUF file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_gpu_layers: int = 0,
        progress: Callable[[float], bool] | None = None,
        vocab_only: bool = False,
        use_extra_bufts: bool | None = None,
        load_mode: int | None = None,
        quantization: str | None = None,
        devices: Sequence[int] | None = None,
        load_mtp: bool = False,
    ) -> None:
        """``devices``: ggml device handles to offload to (None: llama.cpp's default, every
        GPU and RPC worker; an empty list keeps the model on the CPU). ``load_mtp``: load
        the model's MTP (NextN) layers too, so an MTP context may run over them
        (:mod:`specula.core.engine.native.mtp`)."""
        ensure_backend()
        if use_extra_bufts is None:
            use_extra_bufts = extra_buffers_safe(quantization)
        self.path = Path(path)
        if not self.path.is_file():
            raise LoadError(f"{self.path}: no such file")
        params = L.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers
        params.vocab_only = vocab_only
        params.use_extra_bufts = use_extra_bufts
        if load_mtp:
            params.load_mtp = True
        if load_mode is not None:
            params.load_mode = load_mode
        device_list: Any = None  # referenced until the load returns (llama.cpp copies it)
        if devices is not None:
            device_list = (ctypes.c_void_p * (len(devices) + 1))(*devices, None)
            params.devices = ctypes.cast(device_list, ctypes.c_void_p)
        cancelled = False

        def _progress(frac: float, _user: Any) -> bool:
            nonlocal cancelled
            if progress is None:
                return True
            try:
                keep = bool(progress(float(frac)))
            except Exception:  # a failing callback must not unwind through C
                log.exception("progress callback failed")
                keep = True
            cancelled = cancelled or not keep
            return keep

        cb = L.llama_progress_callback(_progress)
        params.progress_callback = cb
        self._model = L.llama_model_load_from_file(str(self.path).encode(), params)
        del device_list
        if not self._model:
            if cancelled:
                raise Cancelled(str(self.path))
            raise LoadError(
                f"{self.path}: llama.cpp could not load this model "
                "(unsupported architecture, corrupt or incomplete file, or not enough memory)"
            )
        self.mtp_loaded = load_mtp  # an MTP context over weights without them aborts
        self._vocab = L.llama_model_get_vocab(self._model)
        self.n_vocab: int = L.llama_vocab_n_tokens(self._vocab)
        self.bos: int = L.llama_vocab_bos(self._vocab)
        self.eos: int = L.llama_vocab_eos(self._vocab)
        self.add_bos: bool = bool(L.llama_vocab_get_add_bos(self._vocab))
        self.n_params: int = int(L.llama_model_n_params(self._model))
        self.size_bytes: int = int(L.llama_model_size(self._model))
        self.n_ctx_train: int = int(L.llama_model_n_ctx_train(self._model))
        self.memory_kind: MemoryKind = (
            MemoryKind.RECURRENT if L.llama_model_is_recurrent(self._model)
            else MemoryKind.HYBRID if L.llama_model_is_hybrid(self._model)
            else MemoryKind.ATTENTION
        )
        self._pieces: dict[int, bytes] = {}
        self._eog: dict[int, bool] = {}  # is_eog per token, asked once per emitted token
        self._piece_buf = ctypes.create_string_buffer(256)
        self._contexts = 0  # open Contexts over these weights (see close)
        self._close_pending = False

    @property
    def ptr(self) -> Any:
        return self._model

    @property
    def vocab(self) -> Any:
        """The llama_vocab pointer (grammars are built over it)."""
        return self._vocab

    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (L.llama_token * n_max)()
        n = L.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_special, parse_special)
        if n < 0:
            n_max = -n
            buf = (L.llama_token * n_max)()
            n = L.llama_tokenize(self._vocab, data, len(data), buf, n_max, add_special, parse_special)
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        """The bytes of one token as generated text (special tokens render as text)."""
        cached = self._pieces.get(token)
        if cached is not None:
            return cached
        n = L.llama_token_to_piece(self._vocab, token, self._piece_buf, 256, 0, False)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self._vocab, token, big, -n, 0, False)
            out = big.raw[:n]
        else:
            out = self._piece_buf.raw[:n]
        self._pieces[token] = out
        return out

    def is_eog(self, token: int) -> bool:
        known = self._eog.get(token)
        if known is None:
            known = self._eog[token] = bool(L.llama_vocab_is_eog(self._vocab, token))
        return known

    def token_text(self, token: int) -> str:
        return str(L.llama_vocab_get_text(self._vocab, token).decode("utf-8", errors="replace"))

    def chat_template(self) -> str | None:
        t = L.llama_model_chat_template(self._model, None)
        return t.decode("utf-8", errors="replace") if t else None

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(4096)
        n = L.llama_model_meta_val_str(self._model, key.encode(), buf, 4096)
        return buf.value.decode("utf-8", errors="replace") if n >= 0 else None

    def close(self) -> None:
        """Free the weights, or, while a Context over them is open, when the last closes.

        A context must be freed before its model. Owners close in that order, but the
        garbage collector finalizes a cycle's objects in no particular order (a reply
        abandoned with its engine), and freeing the model first would leave llama.cpp
        a context over freed weights.
        """
        if getattr(self, "_contexts", 0) > 0:
            self._close_pending = True
            return
        if getattr(self, "_model", None):
            L.llama_model_free(self._model)
            self._model = None

    @property
    def closed(self) -> bool:
        return not getattr(self, "_model", None)

    def _context_opened(self) -> None:
        self._contexts += 1

    def _context_closed(self) -> None:
        self._contexts -= 1
        if self._contexts == 0 and self._close_pending:
            self.close()


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
        self._ctx = L.llama_init_from_model(model.ptr, p)
        if not self._ctx:
            raise LoadError(
                f"{model.path}: could not create a context of {n_ctx} tokens (not enough memory?)"
            )
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

    def decode(self, batch: Batch) -> None:
        """Evaluate ``batch``; raises :class:`ContextFull` or :class:`DecodeError`."""
        if not self._ctx:
            raise DecodeError("decode on a closed context")
        if batch.n_outputs > self.n_outputs_max:
            # llama.cpp aborts the whole process past n_outputs_max: refuse in Python.
            raise DecodeError(f"batch asks for {batch.n_outputs} outputs, max {self.n_outputs_max}")
        t0 = time.perf_counter()
        rc = L.llama_decode(self._ctx, batch.raw)
        if rc == 0:  # a GPU backend returns before the graph is done: wait here, not in
            L.llama_synchronize(self._ctx)  # the first logits read (host time otherwise)
        self.decode_s += time.perf_counter() - t0
        if rc == 1:
            raise ContextFull("no KV slot for the batch")
        if rc != 0:
            raise DecodeError(f"llama_decode returned {rc}")
        for observe in self.observers:
            observe(batch)

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
