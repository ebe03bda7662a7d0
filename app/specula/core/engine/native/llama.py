"""A thin, fast wrapper over llama-cpp-python's ctypes API.

Why not ``llama_cpp.Llama``: its generate loop cannot verify a draft with
rejection sampling, and its draft-model path allocates n_ctx x n_vocab floats.
Here a :class:`Model` owns the weights (this module, with the errors and the memory
kinds), a :class:`~specula.core.engine.native.context.Context` owns one KV cache,
a :class:`~specula.core.engine.native.batch.Batch` (its own file) is a reusable llama_batch
whose arrays are numpy views, and logits are read as zero-copy views.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import llama_cpp as L
import numpy as np
import numpy.typing as npt

from specula.core.cancel import Cancelled
from specula.core.engine.native.backend import ensure_backend, extra_buffers_safe
from specula.core.engine.native.handle import NativeHandle
from specula.core.engine.native.load_log import LoadLog

log = logging.getLogger("specula.engine")

F32 = npt.NDArray[np.float32]


class LoadError(RuntimeError):
    """A model file llama.cpp could not load; the message says which and why. ``reason``:
    llama.cpp's own words for it, read from its log ("" when it logged none)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


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
        with LoadLog() as load_log:
            self._model = L.llama_model_load_from_file(str(self.path).encode(), params)
        del device_list
        if not self._model:
            if cancelled:
                raise Cancelled(str(self.path))
            reason = load_log.reason()
            raise LoadError(
                f"{self.path}: llama.cpp could not load this model: {reason}" if reason else
                f"{self.path}: llama.cpp could not load this model "
                "(unsupported architecture, corrupt or incomplete file, or not enough memory)",
                reason)
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
