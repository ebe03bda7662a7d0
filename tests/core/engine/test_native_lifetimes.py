"""Native handles are freed in llama.cpp's order, whatever order Python gives.

A context must go before its model. Owners close in that order; the garbage
collector finalizes the objects of a cycle in no particular order (an engine
abandoned with a reply in flight), and a late clean-up may reach a context that
is already freed. Both must end in an error or nothing, never in a freed pointer.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specula.core.engine.native import llama as native
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import DecodeError, LoadError, Model
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import chain, make_engine


def _logits_after(ctx: Context, tokens: list[int]) -> np.ndarray:
    ctx.clear()
    b = Batch(len(tokens))
    b.fill(tokens, 0)
    ctx.decode(b)
    out = ctx.logits(-1).copy()
    b.close()
    return out


@pytest.fixture
def frees(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every llama_free / llama_model_free in order, each with whether it was in order:
    a context freed while its model is alive, a model freed with no context open on it."""
    seen: list[tuple[str, bool]] = []
    model_of: dict[int, int] = {}  # open context -> its model
    live_models: set[int] = set()
    real_init, real_load = native.L.llama_init_from_model, native.L.llama_model_load_from_file
    real_free, real_model_free = native.L.llama_free, native.L.llama_model_free

    def address(p: Any) -> int:
        return int(ctypes.cast(p, ctypes.c_void_p).value or 0)

    def load(*args: Any) -> Any:
        m = real_load(*args)
        live_models.add(address(m))
        return m

    def init(model: Any, params: Any) -> Any:
        ctx = real_init(model, params)
        model_of[address(ctx)] = address(model)
        return ctx

    def free(ctx: Any) -> None:
        seen.append(("context", model_of.pop(address(ctx)) in live_models))
        real_free(ctx)

    def model_free(model: Any) -> None:
        m = address(model)
        seen.append(("model", m not in model_of.values()))
        live_models.discard(m)
        real_model_free(model)

    monkeypatch.setattr(native.L, "llama_model_load_from_file", load)
    monkeypatch.setattr(native.L, "llama_init_from_model", init)
    monkeypatch.setattr(native.L, "llama_free", free)
    monkeypatch.setattr(native.L, "llama_model_free", model_free)
    return seen


def test_closing_a_model_with_an_open_context_waits_for_the_context(
        tiny: dict[str, Path], frees: list[tuple[str, bool]]) -> None:
    model = Model(tiny["target"])
    ctx = Context(model, n_ctx=64, n_threads=1)
    before = _logits_after(ctx, [1, 2, 3])
    model.close()
    assert frees == [] and not model.closed
    np.testing.assert_array_equal(_logits_after(ctx, [1, 2, 3]), before)  # weights still there
    ctx.close()
    assert frees == [("context", True), ("model", True)] and model.closed


def test_finalizers_in_the_garbage_collectors_order_free_the_context_first(
        tiny: dict[str, Path], frees: list[tuple[str, bool]]) -> None:
    """The order a collected cycle may pick: the model's finalizer before the context's."""
    model = Model(tiny["target"])
    contexts = [Context(model, n_ctx=64, n_threads=1) for _ in range(2)]
    model.__del__()
    for c in contexts:
        c.__del__()
    assert frees == [("context", True), ("context", True), ("model", True)]


def test_a_closed_context_refuses_work_instead_of_reaching_llama_cpp(tiny: dict[str, Path]) -> None:
    model = Model(tiny["target"])
    ctx = Context(model, n_ctx=64, n_threads=1)
    ctx.close()
    b = Batch(4)
    b.fill([1, 2], 0)
    for call in (lambda: ctx.decode(b), lambda: ctx.logits(0), lambda: ctx.seq_rm(0, 0),
                 lambda: ctx.seq_cp(0, 1), lambda: ctx.seq_keep(0), lambda: ctx.pos_max(0),
                 ctx.clear):
        with pytest.raises(DecodeError, match="closed context"):
            call()
    ctx.close()  # twice is nothing
    b.close()
    model.close()
    with pytest.raises(LoadError, match="closed"):
        Context(model, n_ctx=64, n_threads=1)


def test_an_engine_abandoned_mid_reply_in_a_cycle_is_collected_in_order(
        tiny: dict[str, Path], frees: list[tuple[str, bool]]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"], n_threads=1)
    prompt = eng.tokenize_chat([{"role": "user", "content": "The quick brown fox"}])
    events = eng.generate_tokens(prompt, SamplingParams(temperature=0.0, max_tokens=30), chain(3))
    list(itertools.islice(events, 5))  # suspended inside the reply
    eng.abandoned_reply = events  # type: ignore[attr-defined]  # engine -> reply -> engine
    del eng, events
    gc.collect()
    assert sorted(kind for kind, _ in frees) == ["context", "context", "model", "model"]
    assert all(in_order for _, in_order in frees), frees


def test_every_native_owner_finalizes_through_the_one_guard(
        tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Model, Context, Batch and GrammarState share NativeHandle.__del__: a finalizer whose
    close fails (llama_cpp torn down at interpreter exit) says nothing, and frees the
    handle when it can; an owner's own close() still raises."""
    from specula.core.engine.grammar.state import GrammarState
    from specula.core.engine.native.handle import NativeHandle

    for cls in (Model, Context, Batch, GrammarState):
        assert issubclass(cls, NativeHandle) and cls.__del__ is NativeHandle.__del__
    b = Batch(4)
    monkeypatch.setattr(native.L, "llama_batch_free", None)  # as after module teardown
    with pytest.raises(TypeError):
        b.close()
    b.__del__()  # nothing escapes the finalizer
    monkeypatch.undo()
    freed: list[object] = []
    real = native.L.llama_batch_free
    monkeypatch.setattr(native.L, "llama_batch_free", lambda h: (freed.append(h), real(h)))
    b.__del__()
    assert len(freed) == 1 and b._b is None
