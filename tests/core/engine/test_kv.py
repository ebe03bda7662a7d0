"""The KV mirror: what sequence 0 holds always equals the mirror, on every path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import KVCache
from specula.core.engine.native.llama import ContextFull, Model
from specula.core.engine.native.prefix import common_prefix
from tests.core.engine.conftest import fresh_logits, logits_after

TOKENS = [10 + (i * 13) % 250 for i in range(120)]


@pytest.fixture(scope="module")
def model(tiny: dict[str, Path]) -> Iterator[Model]:
    m = Model(tiny["target"])
    yield m
    m.close()


def _kv(model: Model, n_ctx: int = 256, n_batch: int = 512) -> KVCache:
    return KVCache(Context(model, n_ctx=n_ctx, n_threads=1, n_batch=n_batch, n_seq_max=17,
                           kv_unified=True))


def _matches_fresh(kv: KVCache, model: Model, token: int) -> bool:
    got = logits_after(kv, token)
    want = fresh_logits(model, [*kv.tokens, token])
    return float(np.max(np.abs(got - want))) < 0.05


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2]) == 2
    assert common_prefix((1, 2, 3), [1, 2, 3]) == 3  # a tuple's slice is compared as a list
    long = list(range(300))
    assert common_prefix(long, [*long[:200], -1], start=130) == 200
    assert common_prefix([9, 2, 3], [1, 2, 4], start=1) == 2  # the first ``start`` are trusted


def test_agreement_compares_from_what_agreed_with_the_same_list(model: Model) -> None:
    kv = _kv(model)
    reply = list(TOKENS[:40])
    assert kv.agreement(reply) == 0
    kv.feed(reply[:30])  # fed from the list it agreed with: it still agrees, on 30 now
    reply += [1, 2, 3]
    assert kv.agreement(reply) == 30
    kv.feed([*reply[30:40], 77])  # one token the list does not have (a drafted one)
    assert kv.agreement(reply) == 40
    kv.cut(35)
    assert kv.agreement(reply) == 35
    # a list changed in place at the boundary, or a new list, is compared afresh
    reply[34] = 5
    assert kv.agreement(reply) == 34
    assert kv.agreement([*TOKENS[:10], 0]) == 10
    kv.clear()
    assert kv.agreement(reply) == 0
    kv.ctx.close()


def test_feed_cut_reuse_keep_the_mirror_true(model: Model) -> None:
    kv = _kv(model)
    kv.feed(TOKENS[:60], "none")
    assert kv.tokens == TOKENS[:60] and kv.ctx.pos_max(0) == 59
    kv.cut(25)
    assert kv.tokens == TOKENS[:25] and kv.ctx.pos_max(0) == 24
    assert _matches_fresh(kv, model, TOKENS[25])
    other = [*TOKENS[:20], 7, 8, 9]
    assert kv.reuse(other, limit=len(other) - 1) == 20
    kv.feed(other[20:-1])
    assert kv.tokens == other[:-1] and _matches_fresh(kv, model, other[-1])
    # control: a stale cell (the cache not cut) changes the logits by whole units
    stale = _kv(model)
    stale.feed(TOKENS[:25])
    stale.tokens[10] = (stale.tokens[10] + 1) % 250  # the mirror lies about one token
    assert not _matches_fresh(stale, model, TOKENS[25])
    kv.ctx.close()
    stale.ctx.close()


def test_feed_stays_within_n_batch_and_n_ctx(model: Model) -> None:
    # llama.cpp caps n_batch at n_ctx; feeding 512-token chunks into it would abort the process
    kv = _kv(model, n_ctx=256, n_batch=4096)
    assert kv.ctx.n_batch <= kv.n_ctx
    small = _kv(model, n_ctx=256, n_batch=32)
    small.feed(TOKENS, "last")  # 120 tokens, in chunks of 32
    assert small.tokens == TOKENS and small.ctx.pos_max(0) == len(TOKENS) - 1
    with pytest.raises(ValueError):
        small.feed(TOKENS[:40], "all")  # all outputs need one batch
    assert small.tokens == TOKENS
    with pytest.raises(ContextFull):
        small.feed(TOKENS + TOKENS)  # does not fit: refused before any decode
    assert small.tokens == TOKENS and small.ctx.pos_max(0) == len(TOKENS) - 1
    assert small.room == small.n_ctx - len(TOKENS)
    kv.ctx.close()
    small.ctx.close()


def test_branches_are_dropped_on_every_exit(model: Model) -> None:
    kv = _kv(model)
    kv.feed(TOKENS[:30])
    with pytest.raises(RuntimeError), kv.branches(3) as seqs:
        assert seqs == [1, 2, 3] and all(kv.ctx.pos_max(s) == 29 for s in seqs)
        raise RuntimeError("a failure while the branches are open")
    assert all(kv.ctx.pos_max(s) == -1 for s in range(1, 17))
    assert kv.tokens == TOKENS[:30] and kv.ctx.pos_max(0) == 29
    kv.ctx.close()


def test_commit_branch_keeps_the_winner_only(model: Model) -> None:
    """Two branches after a pending token; the second wins with its first two tokens."""
    kv = _kv(model)
    kv.feed(TOKENS[:30])
    pending, a, b = TOKENS[30], [40, 41, 42], [50, 51, 52]
    batch = Batch(16, 17)
    with kv.branches(2) as (s1, s2):
        batch.fill_tree([pending, *a, *b], [30, 31, 32, 33, 31, 32, 33],
                        [[0, s1, s2], [s1], [s1], [s1], [s2], [s2], [s2]])
        kv.decode(batch, appended=[pending])
        kv.commit_branch(s2, b[:2])
    assert kv.tokens == [*TOKENS[:30], pending, *b[:2]]
    assert kv.ctx.pos_max(0) == 32 and all(kv.ctx.pos_max(s) == -1 for s in range(1, 17))
    assert _matches_fresh(kv, model, 60)
    # an empty tree commits nothing and leaves sequence 0 intact
    with kv.branches(1) as (s,):
        kv.commit_branch(s, [])
    assert kv.ctx.pos_max(0) == 32 and _matches_fresh(kv, model, 60)
    batch.close()
    kv.ctx.close()


def test_a_failed_decode_cuts_back(model: Model) -> None:
    kv = _kv(model)
    kv.feed(TOKENS[:10])
    batch = Batch(4, 1)
    batch.fill([10**6], 10, outputs="last")  # an id outside the vocabulary: llama_decode fails
    with pytest.raises(RuntimeError):
        kv.decode(batch, appended=[10**6])
    assert kv.tokens == TOKENS[:10] and kv.ctx.pos_max(0) == 9
    with pytest.raises(RuntimeError):
        kv.feed([TOKENS[10], 10**6])
    assert kv.tokens == TOKENS[:10] and kv.ctx.pos_max(0) == 9
    assert _matches_fresh(kv, model, TOKENS[10])
    batch.close()
    kv.ctx.close()
