"""Running the real engine over many seeds and comparing with the reference.

One reply per seed (seeds 0..N-1, so every test is deterministic), the cell of
its first n tokens counted, then Pearson's chi-square against
:func:`reference.exact_joint`. Every check prints one line (label, chi-square,
p-value, acceptance) so that ``pytest -rP`` shows the figures a report quotes.

Alpha: a check that must pass asserts p > ``ALPHA_PASS`` = 1e-3; a check that
must catch a bug asserts p < ``ALPHA_POWER`` = 1e-6. The sample sizes leave a
margin on both sides (the figures are in the test output).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StepEvent, StopReason
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import make_engine as _make_engine
from tests.core.engine.reference import (
    Chi2,
    FreshTarget,
    Transform,
    cell_of,
    chi2_test,
    exact_joint,
)

ALPHA_PASS = 1e-3
ALPHA_POWER = 1e-6



# One thread: the tests run pinned to one core, where two threads only contend.
make_engine = partial(_make_engine, n_threads=1)


def prompt_of(eng: Engine, text: str = "hello world") -> list[int]:
    return eng.tokenize_chat([{"role": "user", "content": text}])


def params(t: Transform, n: int, seed: int, rule: str = "rejection-sampling", **kw: Any) -> SamplingParams:
    """SamplingParams for ``t`` under ``rule`` (rejection-sampling or coupled)."""
    return SamplingParams(temperature=t.temperature, top_k=t.top_k, top_p=t.top_p, min_p=t.min_p,
                          repeat_penalty=t.repeat_penalty, repeat_last_n=t.repeat_last_n,
                          max_tokens=n, seed=seed, rule=sampling.Rule(rule), **kw)


def spec(mode: str, **kw: Any) -> SpecConfig:
    """The settings under test. Drafting starts at the first generated token
    (``draft_first_token``): by default the first step is the target's alone, which
    would leave the first position, where most of the probability mass of these
    joints is decided, untouched by the rule under test."""
    kw.setdefault("draft_first_token", True)
    return SpecConfig(mode=Mode(mode), **kw)


@dataclass
class Tally:
    """What the replies did, to show that a check exercised what it claims to."""

    drafted: int = 0
    accepted: int = 0
    steps: int = 0
    drafting_steps: int = 0
    max_accepted: int = 0  # the longest accepted run in one step
    rules: set[str] = field(default_factory=set)

    @property
    def acceptance(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    def __str__(self) -> str:
        return (f"acceptance={self.acceptance:.3f} drafted={self.drafted} steps={self.steps} "
                f"drafting_steps={self.drafting_steps} max_accepted={self.max_accepted} "
                f"rules={sorted(self.rules)}")


def collect(eng: Engine, prompt: list[int], t: Transform, n: int, sc: SpecConfig, n_runs: int,
            rule: str = "rejection-sampling", max_tokens: int | None = None,
            **kw: Any) -> tuple[Counter[tuple[int, ...]], Tally]:
    """Cells of the first ``n`` tokens over seeds 0..n_runs-1 (replies of ``max_tokens``,
    default ``n``), and what drafting did."""
    counts: Counter[tuple[int, ...]] = Counter()
    tally = Tally()
    for seed in range(n_runs):
        done = reply(eng, prompt, params(t, max_tokens or n, seed, rule, **kw), sc, tally)
        counts[cell_of(done.token_ids, n, done.stop_reason is StopReason.EOS)] += 1
    return counts, tally


@dataclass
class Check:
    chi2: Chi2
    tally: Tally
    seconds: float

    @property
    def p(self) -> float:
        return self.chi2.p_value


def check(label: str, eng: Engine, ref: FreshTarget, prompt: list[int], t: Transform, n: int,
          sc: SpecConfig, n_runs: int, rule: str = "rejection-sampling", **kw: Any) -> Check:
    """Chi-square of the engine's first ``n`` tokens against the reference; prints a line."""
    expected = exact_joint(ref, prompt, t, n)
    t0 = time.perf_counter()
    counts, tally = collect(eng, prompt, t, n, sc, n_runs, rule, **kw)
    out = Check(chi2_test(counts, expected), tally, time.perf_counter() - t0)
    print(f"[{label}] {out.chi2} | {tally} | {out.seconds:.1f}s")
    return out


class FakeClock:
    """A clock that advances 1 ms per reading: the adaptive policy's timing-based choices
    become a function of the code path alone, so a test over seeds is deterministic."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return next(self._ticks) * 1e-3


@contextmanager
def fake_clock() -> Iterator[None]:
    """time.perf_counter is a :class:`FakeClock` inside the block (and only there)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "perf_counter", FakeClock())
        yield


def reply(eng: Engine, prompt: list[int], sp: SamplingParams, sc: SpecConfig,
          tally: Tally | None = None) -> Done:
    """Run one reply to its end; count its steps into ``tally``."""
    for ev in eng.generate_tokens(prompt, sp, sc):
        if isinstance(ev, StepEvent) and tally is not None:
            rec = ev.record
            tally.steps += 1
            tally.drafted += rec.drafted
            tally.accepted += rec.accepted
            tally.drafting_steps += rec.drafted > 0
            tally.max_accepted = max(tally.max_accepted, rec.accepted)
        elif isinstance(ev, Done):
            if tally is not None:
                tally.rules.add(ev.stats.acceptance_rule)
            return ev
    raise AssertionError("no Done event")
