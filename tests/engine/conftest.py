"""Engines over the tiny models, shared by the engine tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import Done, Event, TokenEvent
from specula.core.engine.sampling import SamplingParams
from specula.core.engine.session import Engine, EngineOptions


def make_engine(target: Path, draft: Path | None = None, n_ctx: int = 1024) -> Engine:
    eng = Engine(EngineOptions(n_ctx=n_ctx, n_threads=2))
    eng.load_target(target)
    if draft is not None:
        eng.load_draft(draft)
    return eng


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


def chain(k: int, **kw: object) -> SpecConfig:
    return SpecConfig(mode=Mode.CHAIN, draft_max=k, **kw)  # type: ignore[arg-type]
