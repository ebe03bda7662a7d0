"""Engines over the tiny models, shared by the engine tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, Event, TokenEvent
from specula.core.engine.loop.generator import Generator
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import KVCache
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.reference import FreshTarget


def make_engine(target: Path, draft: Path | None = None, n_ctx: int = 1024,
                n_threads: int = 2) -> Engine:
    eng = Engine(EngineOptions(n_ctx=n_ctx, n_threads=n_threads))
    eng.load_target(target)
    if draft is not None:
        eng.load_draft(draft)
    return eng


@pytest.fixture(scope="module")
def ref(tiny: dict[str, Path]) -> Iterator[FreshTarget]:
    """The independent reference: the tiny target, evaluated afresh for every prefix."""
    r = FreshTarget(tiny["target"])
    yield r
    r.close()


@pytest.fixture(scope="module")
def pair(tiny: dict[str, Path]) -> Iterator[Engine]:
    """The tiny target with its partly-right draft, on one thread (the statistical tests)."""
    eng = make_engine(tiny["target"], tiny["draft"], n_threads=1)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def engine(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"])
    yield eng
    eng.close()


def run(eng: Engine, prompt: str | list[int], sampling: SamplingParams, spec: SpecConfig,
        **kw: object) -> tuple[Done, list[TokenEvent]]:
    """Run one reply to the end; returns the Done event and the token events."""
    if isinstance(prompt, str):
        events: Iterator[Event] = eng.chat([{"role": "user", "content": prompt}], sampling, spec, **kw)  # type: ignore[arg-type]
    else:
        events = eng.generate_tokens(prompt, sampling, spec, **kw)  # type: ignore[arg-type]
    tokens: list[TokenEvent] = []
    for ev in events:
        if isinstance(ev, TokenEvent):
            tokens.append(ev)
        elif isinstance(ev, Done):
            return ev, tokens
    raise AssertionError("no Done event")


PLAIN = SpecConfig(mode=Mode.PLAIN)


def fresh_logits(model: Model | None, tokens: list[int], n_ctx: int = 512, n_threads: int = 2) -> np.ndarray:
    """The target's next-token logits after ``tokens``, from a new context in one batch."""
    assert model is not None
    ctx = Context(model, n_ctx=n_ctx, n_threads=n_threads)
    b = Batch(n_ctx)
    b.fill(tokens, 0, outputs="last")
    ctx.decode(b)
    out = ctx.logits(-1).copy()
    ctx.close()
    return out


def chain(k: int, **kw: object) -> SpecConfig:
    return SpecConfig(mode=Mode.CHAIN, draft_max=k, **kw)  # type: ignore[arg-type]


def logits_after(kv: KVCache, token: int) -> np.ndarray:
    """Logits after the mirror's tokens + ``token``, evaluated on the cache (then cut back)."""
    n = len(kv)
    kv.feed([token], "last")
    out = kv.ctx.logits(-1).copy()
    kv.cut(n)
    return out


def decode_last(gen: Generator, committed: list[int]) -> np.ndarray:
    """The logits the generator's target context gives after decoding ``committed``'s last
    token on top of what its cache holds (``committed[:-1]``, which the caller checks)."""
    b = Batch(8)
    b.fill([committed[-1]], len(committed) - 1, outputs="last")
    gen.ctx.decode(b)
    return gen.ctx.logits(-1).copy()


@contextmanager
def decoded(path: Path, tokens: list[int], outputs: str = "last"
            ) -> Iterator[tuple[Model, Context, Batch]]:
    """A model, a 64-token context that has decoded ``tokens`` from position 0, and the
    batch it used; all closed on exit."""
    model = Model(path)
    ctx = Context(model, n_ctx=64, n_threads=1)
    b = Batch(8, 1)
    try:
        b.fill(tokens, 0, outputs=outputs)
        ctx.decode(b)
        yield model, ctx, b
    finally:
        b.close()
        ctx.close()
        model.close()


class _Closes(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closes)


@contextmanager
def closing_all(items: dict[str, C]) -> Iterator[dict[str, C]]:
    """``items`` (engines, references, models by family), each closed on exit."""
    try:
        yield items
    finally:
        for item in items.values():
            item.close()


@contextmanager
def logged_decodes(eng: Engine, monkeypatch: pytest.MonkeyPatch
                   ) -> Iterator[list[tuple[str, int, float]]]:
    """While open, every llama decode is logged as ("draft" | "target", batch size, seconds):
    the seconds Context.decode returns, timed inside it and independently of the callers
    that sum them."""
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    draft_ctx = gen.draft_model.ctx
    log: list[tuple[str, int, float]] = []
    real = Context.decode

    def decode(self: Context, batch: Batch) -> float:
        spent = real(self, batch)
        log.append(("draft" if self is draft_ctx else "target", batch.n_tokens, spent))
        return spent

    monkeypatch.setattr(Context, "decode", decode)
    try:
        yield log
    finally:
        monkeypatch.setattr(Context, "decode", real)
