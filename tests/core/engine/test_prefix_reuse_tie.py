"""What prefix reuse keeps bitwise, on a dense and an MoE target (docs/engine.md,
"Plain's text: what is bitwise the same").

The next turn of a conversation keeps the cache's common prefix and decodes only the
rest. Those kept cells were computed in other batch shapes than a fresh prefill of the
same prompt would use (a reply's tokens one by one, a prompt's tail in its own batch), so
a fresh run of the same prompt can round differently, and on an MoE target that can,
rarely, change a greedy reply. What does hold, and is checked here: regenerating a reply
in the same engine keeps the prompt's cells exactly as the first generation computed
them, so the second generation is the first one bitwise (tokens, logprobs, and every K
and V row of the cache).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, TokenEvent
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.tree_cache_probe import CacheDump, dump
from tests.core.engine.sampling_runs import fake_clock, make_engine

PLAIN = SpecConfig(mode=Mode.PLAIN)
PARAMS = SamplingParams(max_tokens=120, logprobs=2)


def _target(tiny: dict[str, Path], families: dict[str, Path], family: str) -> Path:
    return tiny["target"] if family == "llama" else families[family]


def _turn(eng: Engine, msgs: list[dict[str, str]]) -> tuple[Done, list[tuple[int, float | None]]]:
    got: list[tuple[int, float | None]] = []
    with fake_clock():
        for ev in eng.chat(msgs, PARAMS, PLAIN):
            if isinstance(ev, TokenEvent):
                got.append((ev.token_id, ev.logprob))
            elif isinstance(ev, Done):
                return ev, got
    raise AssertionError("no Done event")


def _same_cells(a: CacheDump, b: CacheDump, n: int) -> bool:
    ia, ib = a.by_pos(), b.by_pos()
    return all(
        bool((ka[ia[p]] == kb[ib[p]]).all() and (va[ia[p]] == vb[ib[p]]).all())
        for p in range(n) for ka, kb, va, vb in zip(a.k, b.k, a.v, b.v, strict=True)
    )


@pytest.mark.parametrize("family", ["llama", "qwen3moe"])
def test_regenerating_with_prefix_reuse_is_bitwise_the_first_generation(
        tiny: dict[str, Path], families: dict[str, Path], family: str) -> None:
    eng = make_engine(_target(tiny, families, family), n_ctx=1024)
    try:
        gen = eng.generator
        assert gen is not None
        msgs = [{"role": "user", "content": "hello world"}]
        first, _ = _turn(eng, msgs)
        msgs += [{"role": "assistant", "content": first.text},
                 {"role": "user", "content": "and the draft of the model"}]
        prompt = eng.tokenize_chat(msgs)
        once, tokens_once = _turn(eng, msgs)  # the second turn, on the kept prefix
        cells_once = dump(gen.ctx, 0)
        again, tokens_again = _turn(eng, msgs)  # regenerate: the same prompt once more
        cells_again = dump(gen.ctx, 0)
    finally:
        eng.close()
    # Both later turns kept a prefix: only part of the prompt was evaluated.
    assert 0 < once.stats.prefill_tokens < len(prompt) - 1
    assert 0 <= again.stats.prefill_tokens < once.stats.prefill_tokens
    assert tokens_again == tokens_once  # token ids and logprobs, bitwise
    n = len(prompt) + min(len(tokens_once), len(tokens_again)) - 1
    assert _same_cells(cells_once, cells_again, n)
