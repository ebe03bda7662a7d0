"""Every speculative mode gives plain decoding's reply on every model family.

Family x mode (plain, chain, tree, lookup, adaptive), with a noisy copy of the
target as the draft (same architecture, accepted often but not always, so every
reply has rejected steps to cut back):

* greedy: the reply equals plain greedy decoding's;
* a fixed seed under the coupled rule gives plain's text;
* two replies in one engine, the second continuing the first conversation (the
  prefix the engine keeps between replies), each equal to plain on a fresh engine;
* a reply after a cut near a full context (a prompt that leaves a few tokens).

The plain references come from a separate engine that holds only the target and
never speculates. Lookup's and adaptive's timing-based choices run on a fake
clock (a function of the code path alone), so each case is deterministic.

The families come from specula_tools.tiny_families (fixture ``families``) and the
llama family from specula_tools.tiny_models (fixture ``tiny``), as the control.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StopReason
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.sampling_runs import Tally, fake_clock, make_engine, reply

FAMILIES = ["llama", "qwen3moe", "mamba", "mamba2", "qwen35", "granitehybrid", "lfm2"]
MODES = [Mode.PLAIN, Mode.CHAIN, Mode.TREE, Mode.LOOKUP, Mode.ADAPTIVE]
N_CTX = 512
N_CTX_SMALL = 128  # the near-full case
N_TOKENS = 48
GREEDY = SamplingParams(max_tokens=N_TOKENS)
SEEDS = (3, 11)


def coupled(seed: int) -> SamplingParams:
    return SamplingParams(temperature=0.8, top_k=20, seed=seed, max_tokens=N_TOKENS,
                          rule=sampling.Rule.COUPLED)


def spec(mode: Mode) -> SpecConfig:
    return SpecConfig(mode=mode, draft_max=4, tree_budget=8, tree_width=2)


def _paths(tiny: dict[str, Path], families: dict[str, Path], family: str) -> tuple[Path, Path]:
    if family == "llama":
        return tiny["target"], tiny["draft"]
    return families[family], families[f"{family}-draft"]


class Pair:
    """One family's speculating engine (target + draft) and its plain reference engine."""

    def __init__(self, target: Path, draft: Path, n_ctx: int) -> None:
        self.spec = make_engine(target, draft, n_ctx=n_ctx)
        self.plain = make_engine(target, n_ctx=n_ctx)

    def close(self) -> None:
        self.spec.close()
        self.plain.close()


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request: pytest.FixtureRequest, tiny: dict[str, Path],
         families: dict[str, Path]) -> Iterator[tuple[str, Pair]]:
    p = Pair(*_paths(tiny, families, request.param), N_CTX)
    yield request.param, p
    p.close()


def _prompt(eng: Engine, text: str) -> list[int]:
    return eng.tokenize_chat([{"role": "user", "content": text}])


def _plain(p: Pair, prompt: list[int], sp: SamplingParams) -> Done:
    gen = p.plain.generator
    assert gen is not None
    gen.reset()  # a fresh engine's answer: nothing kept from an earlier reply
    with fake_clock():
        return reply(p.plain, prompt, sp, SpecConfig(mode=Mode.PLAIN))


def _spec(p: Pair, prompt: list[int], sp: SamplingParams, mode: Mode, tally: Tally) -> Done:
    with fake_clock():
        done = reply(p.spec, prompt, sp, spec(mode), tally)
    assert done.stop_reason is not StopReason.ERROR, done.message
    return done


def _first_difference(want: list[int], got: list[int]) -> int | None:
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            return i
    return None if len(want) == len(got) else min(len(want), len(got))


def _assert_same(family: str, mode: Mode, what: str, want: list[int], got: list[int],
                 tally: Tally) -> None:
    at = _first_difference(want, got)
    assert at is None, f"{family} {mode.value} {what}: differs from plain at token {at} ({tally})"


@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_greedy_equals_plain(pair: tuple[str, Pair], mode: Mode) -> None:
    family, p = pair
    tally = Tally()
    for text in ("hello world", "def print self return the code"):
        prompt = _prompt(p.spec, text)
        want = _plain(p, prompt, GREEDY)
        got = _spec(p, prompt, GREEDY, mode, tally)
        _assert_same(family, mode, f"greedy {text!r}", want.token_ids, got.token_ids, tally)
    print(f"[{family} {mode.value} greedy] {tally}")


@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_seeded_coupled_gives_plain_text(pair: tuple[str, Pair], mode: Mode) -> None:
    family, p = pair
    tally = Tally()
    prompt = _prompt(p.spec, "the model and the token")
    for seed in SEEDS:
        want = _plain(p, prompt, coupled(seed))
        got = _spec(p, prompt, coupled(seed), mode, tally)
        assert got.text == want.text, (
            f"{family} {mode.value} seed {seed}: text differs from plain at token "
            f"{_first_difference(want.token_ids, got.token_ids)} ({tally})")
    print(f"[{family} {mode.value} coupled] {tally}")


@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_two_replies_in_one_engine(pair: tuple[str, Pair], mode: Mode) -> None:
    """The second reply continues the first conversation: the engine keeps the shared
    prefix between replies, and what it keeps must be exactly the target's state."""
    family, p = pair
    tally = Tally()
    gen = p.spec.generator
    assert gen is not None
    gen.reset()
    first = _prompt(p.spec, "hello world")
    want1 = _plain(p, first, GREEDY)
    got1 = _spec(p, first, GREEDY, mode, tally)
    _assert_same(family, mode, "first reply", want1.token_ids, got1.token_ids, tally)
    # The app's next turn: the whole conversation again, which starts with what the engine
    # holds (the first prompt and, where the text tokenizes back the same, the reply).
    second = p.spec.tokenize_chat([{"role": "user", "content": "hello world"},
                                   {"role": "assistant", "content": got1.text},
                                   {"role": "user", "content": "and the draft"}])
    assert second[:len(first)] == first
    want2 = _plain(p, second, GREEDY)
    got2 = _spec(p, second, GREEDY, mode, tally)
    _assert_same(family, mode, "second reply", want2.token_ids, got2.token_ids, tally)
    print(f"[{family} {mode.value} two replies] {tally}")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_reply_after_a_cut_near_a_full_context(tiny: dict[str, Path], families: dict[str, Path],
                                               family: str, mode: Mode) -> None:
    p = Pair(*_paths(tiny, families, family), N_CTX_SMALL)
    try:
        tally = Tally()
        # A first reply that speculates (and cuts), then a prompt that leaves a few tokens.
        warm = _prompt(p.spec, "the code and the model")
        _spec(p, warm, SamplingParams(max_tokens=16), mode, tally)
        motif = _prompt(p.spec, "the code and the model and the draft token")[1:]
        prompt = [0, *(motif * N_CTX_SMALL)][: N_CTX_SMALL - 10]
        want = _plain(p, prompt, GREEDY)
        got = _spec(p, prompt, GREEDY, mode, tally)
        _assert_same(family, mode, "near a full context", want.token_ids, got.token_ids, tally)
        assert got.stop_reason == want.stop_reason
        print(f"[{family} {mode.value} near full] {tally}")
    finally:
        p.close()
