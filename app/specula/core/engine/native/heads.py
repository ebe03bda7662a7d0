"""The native side of draft heads (EAGLE-3, DFlash, DSpark): separate small GGUFs that
draft from the target's hidden states.

llama.cpp runs a head as its own context over the head's weights with ``ctx_other`` =
the target's context (the head borrows the target's token embeddings and, for DFlash,
its output matrix; ``llama_init_from_model`` returns NULL without it). The target keeps
the *input* of a few of its layers per decoded token when asked
(``llama_set_embeddings_layer_inp``); the head's encoder turns them into its own rows.

The calls are in llama.cpp's ``src/llama-ext.h`` with C++ linkage and not bound by
llama-cpp-python: they are bound here the way ``llama_cpp.llama_cpp_ext`` binds their
nextn siblings (the plain name, the Itanium name, the MSVC name, tried in turn). A
library without them has no heads (:func:`missing` says why) and nothing is attempted.

Two ways to abort the process that are refused here, in Python: a target architecture
whose graph does not record its layer inputs (``GGML_ASSERT(t_layer_inp[il] != nullptr)``
on the first decode: ``draft_head.LAYER_INPUT_ARCHS``), and an encoder batch larger than the
head's ``n_ubatch`` (``GGML_ASSERT(cparams.n_ubatch >= n_tokens)``).
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp as L
import numpy as np
import numpy.typing as npt

from specula.core.engine.native.context import Context, ExtBatchOwner, ext_batch
from specula.core.engine.native.llama import DecodeError, LoadError, MemoryKind, Model

F32 = npt.NDArray[np.float32]

LLAMA_PROCESS_TYPE_ENCODE = 0
LLAMA_PROCESS_TYPE_DECODE = 1


_c_ctx = ctypes.c_void_p
_c_model = ctypes.c_void_p

# (name, argtypes, restype): the C name, then its Itanium and MSVC manglings.
_SIGNATURES: dict[str, tuple[tuple[str, ...], list[Any], Any]] = {
    "set_layer_inp": ((
        "llama_set_embeddings_layer_inp",
        "_Z30llama_set_embeddings_layer_inpP13llama_contextjb",
        "?llama_set_embeddings_layer_inp@@YAXPEAUllama_context@@I_N@Z",
    ), [_c_ctx, ctypes.c_uint32, ctypes.c_bool], None),
    "get_layer_inp": ((
        "llama_get_embeddings_layer_inp",
        "_Z30llama_get_embeddings_layer_inpP13llama_contextj",
        "?llama_get_embeddings_layer_inp@@YAPEAMPEAUllama_context@@I@Z",
    ), [_c_ctx, ctypes.c_uint32], ctypes.c_void_p),
    "target_layer_ids": ((
        "llama_model_target_layer_ids",
        "_Z28llama_model_target_layer_idsPK11llama_model",
        "?llama_model_target_layer_ids@@YAPEBHPEBUllama_model@@@Z",
    ), [_c_model], ctypes.POINTER(ctypes.c_int32)),
    "target_layer_ids_n": ((
        "llama_model_target_layer_ids_n",
        "_Z30llama_model_target_layer_ids_nPK11llama_model",
        "?llama_model_target_layer_ids_n@@YAIPEBUllama_model@@@Z",
    ), [_c_model], ctypes.c_uint32),
    "dflash_selector_top_k": ((
        "llama_model_dflash_selector_top_k",
        "_Z33llama_model_dflash_selector_top_kPK11llama_model",
        "?llama_model_dflash_selector_top_k@@YAHPEBUllama_model@@@Z",
    ), [_c_model], ctypes.c_int32),
    "get_ctx_other": ((
        "llama_get_ctx_other",
        "_Z19llama_get_ctx_otherP13llama_context",
        "?llama_get_ctx_other@@YAPEAUllama_context@@PEAU1@@Z",
    ), [_c_ctx], ctypes.c_void_p),
    "set_nextn": ((
        "llama_set_embeddings_nextn",
        "_Z26llama_set_embeddings_nextnP13llama_contextbb",
        "?llama_set_embeddings_nextn@@YAXPEAUllama_context@@_N1@Z",
    ), [_c_ctx, ctypes.c_bool, ctypes.c_bool], None),
    "get_nextn": ((
        "llama_get_embeddings_nextn",
        "_Z26llama_get_embeddings_nextnP13llama_context",
        "?llama_get_embeddings_nextn@@YAPEAMPEAUllama_context@@@Z",
    ), [_c_ctx], ctypes.c_void_p),
    "get_nextn_ith": ((
        "llama_get_embeddings_nextn_ith",
        "_Z30llama_get_embeddings_nextn_ithP13llama_contexti",
        "?llama_get_embeddings_nextn_ith@@YAPEAMPEAUllama_context@@H@Z",
    ), [_c_ctx, ctypes.c_int32], ctypes.c_void_p),
}

_fn: dict[str, Any] = {}
_missing: str | None = None


def bind_symbol(lib: Any, names: tuple[str, ...], argtypes: list[Any], restype: Any) -> Any:
    """The first of ``names`` that ``lib`` exports, typed; AttributeError naming them all.

    A function object of its own (``lib[name]``): ``getattr`` hands out the one the library
    caches, which llama_cpp_ext's bindings (the MTP head's) share, and typing it here would
    change what their calls return (a pointer read as a plain integer)."""
    for name in names:
        try:
            func = lib[name]
        except AttributeError:
            continue
        func.argtypes = argtypes
        func.restype = restype
        return func
    raise AttributeError(f"none of {', '.join(names)} is exported")


def bind_all(lib: Any) -> tuple[dict[str, Any], str]:
    """Every call of :data:`_SIGNATURES` from ``lib``: (the functions, ""), or ({}, the
    sentence saying what is missing)."""
    found: dict[str, Any] = {}
    try:
        for key, (names, argtypes, restype) in _SIGNATURES.items():
            found[key] = bind_symbol(lib, names, argtypes, restype)
        for name in ("llama_batch_ext_init", "llama_batch_ext_add_embd", "llama_process",
                     "llama_batch_ext_set_embd_token", "llama_set_causal_attn"):
            getattr(L, name)
    except AttributeError as exc:
        return {}, f"this llama.cpp library has no draft-head support ({exc})"
    return found, ""


def _bind() -> str:
    """Bind every call once; "" when all are there, else the sentence saying what is not."""
    global _missing
    if _missing is None:
        found, _missing = bind_all(L.llama_cpp._lib)
        _fn.update(found)
    return _missing


def _floats(addr: int, n: int) -> F32:
    """A view of ``n`` floats of llama.cpp's memory at ``addr`` (copy it to keep it)."""
    ptr = ctypes.cast(addr, ctypes.POINTER(ctypes.c_float))
    out: F32 = np.ctypeslib.as_array(ptr, shape=(n,))
    return out


def n_embd(model: Model) -> int:
    """A model's hidden size (a head's rows, a target's layer inputs)."""
    return int(L.llama_model_n_embd(model.ptr))


def missing() -> str:
    """"" when this libllama can run EAGLE-3 / DFlash heads, else why not."""
    return _bind()


def _need() -> None:
    why = _bind()
    if why:
        raise LoadError(why)


def target_layer_ids(model: Model) -> list[int]:
    """The target layers a head reads (from the head's own weights)."""
    _need()
    n = int(_fn["target_layer_ids_n"](model.ptr))
    ptr = _fn["target_layer_ids"](model.ptr)
    return [int(ptr[i]) for i in range(n)] if ptr and n else []


def ctx_other(ctx: Context) -> Any:
    """The context a head context was opened beside (its ``ctx_other``), or None."""
    _need()
    return _fn["get_ctx_other"](ctx.ptr)


def set_layer_rows(target: Context, layer_ids: list[int], on: bool) -> None:
    """Keep (or stop keeping) the inputs of ``layer_ids`` for every token the target
    decodes. The caller has checked the architecture records them (LAYER_INPUT_ARCHS)."""
    _need()
    if target.ptr:
        for lid in sorted(set(layer_ids)):
            _fn["set_layer_inp"](target.ptr, lid, on)


def layer_rows(target: Context, layer_ids: list[int], n: int, n_embd: int) -> F32 | None:
    """A copy of the last target decode's ``n`` rows of each of ``layer_ids``, side by side
    per token: shape (n, len(layer_ids) * n_embd), what a head's encoder reads. None when
    the target kept none (rows are off)."""
    _need()
    out = np.empty((n, len(layer_ids) * n_embd), dtype=np.float32)
    for k, lid in enumerate(layer_ids):
        ptr = _fn["get_layer_inp"](target.ptr, lid)
        if not ptr:
            return None
        out[:, k * n_embd:(k + 1) * n_embd] = _floats(ptr, n * n_embd).reshape(n, n_embd)
    return out


class HeadContext(ExtBatchOwner):
    """A head's context beside its target's, with one reusable extended batch.

    The three things a head does go through here: :meth:`encode` (EAGLE-3: target
    features -> the head's rows, no memory touched), :meth:`decode` (tokens, each with a
    row: EAGLE-3's decoder; or, without rows, DFlash's noise block) and :meth:`inject`
    (DFlash: target features written into the head's cache at their positions).
    """

    def __init__(self, model: Model, target: Context, *, n_batch: int, n_outputs_max: int,
                 causal: bool = True) -> None:
        _need()
        self.model = model
        self.n_embd = n_embd(model)
        self.ctx = Context(model, n_ctx=target.n_ctx, n_threads=target.n_threads,
                           n_batch=n_batch, n_seq_max=1, n_outputs_max=n_outputs_max,
                           ctx_other=target)
        self.ctx.memory = MemoryKind.ATTENTION  # one or a few attention blocks: cut by seq_rm
        _fn["set_nextn"](self.ctx.ptr, True, True)  # the head's rows of the outputs asked for
        if not causal:
            L.llama_set_causal_attn(self.ctx.ptr, False)
        self._batch, self._pos, self._embd = ext_batch(self.ctx, "the head's batch")

    @property
    def n_ctx(self) -> int:
        return self.ctx.n_ctx

    def _entry(self, idx: int, pos: int, output: bool) -> None:
        if idx < 0:
            raise DecodeError(f"the head's batch refused an entry ({idx})")
        self._pos.value = pos
        ok = bool(L.llama_batch_ext_set_pos(self._batch, idx, ctypes.byref(self._pos)))
        ok = ok and bool(L.llama_batch_ext_set_output_logits(self._batch, idx, output))
        if not ok:
            raise DecodeError("the head's batch refused an entry")

    def _run(self, kind: int) -> float:
        return self.ctx.process(kind, self._batch, "head")

    def _embd_view(self, addr: int, width: int) -> Any:
        self._embd.n_embd = width
        self._embd.data = ctypes.cast(addr, ctypes.POINTER(ctypes.c_float))
        return self._embd

    def encode(self, feats: F32) -> F32:
        """EAGLE-3's encoder (the fc over the target's features): one row per token of
        ``feats``, in chunks of the head's batch size (a larger encoder batch aborts)."""
        feats = np.ascontiguousarray(feats, dtype=np.float32)
        n, width = feats.shape
        out = np.empty((n, self.n_embd), dtype=np.float32)
        step = min(self.ctx.n_batch, self.ctx.n_outputs_max)  # every entry is an output
        for i in range(0, n, step):
            chunk = feats[i:i + step]
            L.llama_batch_ext_clear(self._batch)
            base = chunk.ctypes.data
            # the encoder reads no positions, but the batch must continue the cache's (as
            # llama.cpp's drafter numbers them); nothing is written to the cache
            p0 = self.ctx.pos_max(0) + 1
            for j in range(len(chunk)):
                idx = L.llama_batch_ext_add_embd(self._batch, 0, self._embd_view(base + j * width * 4, width))
                self._entry(idx, p0 + j, True)
            self._run(LLAMA_PROCESS_TYPE_ENCODE)
            ptr = _fn["get_nextn"](self.ctx.ptr)
            if not ptr:
                raise DecodeError("the head's encoder returned no rows")
            out[i:i + len(chunk)] = _floats(ptr, len(chunk) * self.n_embd).reshape(len(chunk), self.n_embd)
        return out

    def decode(self, tokens: list[int], pos0: int, rows: F32 | None, *, outputs: int = 1) -> float:
        """Evaluate ``tokens`` at ``pos0..`` (token i with ``rows[i]`` when given); the last
        ``outputs`` entries keep logits (and rows). Returns seconds."""
        n = len(tokens)
        if rows is not None:
            rows = np.ascontiguousarray(rows, dtype=np.float32)
            if rows.shape != (n, self.n_embd):
                raise ValueError(f"rows must be ({n}, {self.n_embd}), got {rows.shape}")
        if not self.ctx.ptr:
            raise DecodeError("decode on a closed head context")
        L.llama_batch_ext_clear(self._batch)
        for i, tok in enumerate(tokens):
            idx = L.llama_batch_ext_add_token(self._batch, 0, int(tok))
            if rows is not None and idx >= 0:
                addr = rows.ctypes.data + i * self.n_embd * 4
                if not L.llama_batch_ext_set_embd_token(self._batch, idx, self._embd_view(addr, self.n_embd)):
                    raise DecodeError("the head's batch refused a row")
            self._entry(idx, pos0 + i, i >= n - outputs)
        return self._run(LLAMA_PROCESS_TYPE_DECODE)

    def inject(self, feats: F32, pos0: int) -> float:
        """DFlash: the target's features of positions ``pos0..`` into the head's cache
        (the fused decode encodes them and writes their keys and values)."""
        feats = np.ascontiguousarray(feats, dtype=np.float32)
        n, width = feats.shape
        spent = 0.0
        step = self.ctx.n_batch
        for i in range(0, n, step):
            chunk = feats[i:i + step]
            L.llama_batch_ext_clear(self._batch)
            base = chunk.ctypes.data
            for j in range(len(chunk)):
                idx = L.llama_batch_ext_add_embd(self._batch, 0, self._embd_view(base + j * width * 4, width))
                self._entry(idx, pos0 + i + j, False)
            spent += self._run(LLAMA_PROCESS_TYPE_DECODE)
        return spent

    def row(self, i: int = -1) -> F32:
        """A copy of the head's own row of output ``i`` (EAGLE-3: the next step's input)."""
        ptr = _fn["get_nextn_ith"](self.ctx.ptr, i)
        if not ptr:
            raise DecodeError("the head returned no row")
        return np.array(_floats(ptr, self.n_embd))
