"""Engines over the tiny models, shared by the engine tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, Event, TokenEvent
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
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


def fresh_logits(model: Model | None, tokens: list[int]) -> np.ndarray:
    """The target's next-token logits after ``tokens``, from a new context in one batch."""
    assert model is not None
    ctx = Context(model, n_ctx=512, n_threads=2)
    b = Batch(512)
    b.fill(tokens, 0, outputs="last")
    ctx.decode(b)
    out = ctx.logits(-1).copy()
    ctx.close()
    return out


def chain(k: int, **kw: object) -> SpecConfig:
    return SpecConfig(mode=Mode.CHAIN, draft_max=k, **kw)  # type: ignore[arg-type]
