"""The n-gram cache, its file, and lookup's fallback to it (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specula.core.engine.drafters import DraftRequest, LookupDrafter
from specula.core.engine.drafters.ngram_cache import MIN_MARGIN, NgramCache
from specula.core.engine.drafters.ngram_store import NgramStore, clear_caches, list_caches
from specula.core.engine.drafters.proposal import CACHE_MATCH
from specula.core.engine.sampling.rules import SamplingParams


def majority(followers: list[int]) -> tuple[int, int]:
    """Reference for one n-gram: the Boyer-Moore majority candidate and its margin."""
    cand, c = -1, 0
    for t in followers:
        if c == 0:
            cand, c = t, 1
        elif t == cand:
            c += 1
        else:
            c -= 1
    return cand, c


def test_counts_follow_a_majority_vote_per_ngram() -> None:
    """Every n-gram of a text gets the follower an independent majority vote gives it."""
    rng = np.random.default_rng(1)
    # 3 symbols: 120 distinct n-grams, seen often, in a table big enough that none collide
    text = [int(t) for t in rng.choice(3, size=600, p=[0.6, 0.3, 0.1])]
    cache = NgramCache(slots=1 << 20)
    cache.learn(text)
    followers: dict[tuple[int, ...], list[int]] = {}
    for i in range(1, len(text)):
        for n in range(1, 5):
            if i - n >= 0:
                followers.setdefault(tuple(text[i - n:i]), []).append(text[i])
    checked = 0
    for gram, fol in followers.items():
        want, margin = majority(fol)
        got = cache.next_token(list(gram))
        # the longest n-gram is asked first; check only those whose own bar decides
        if margin >= MIN_MARGIN[len(gram) - 1] and len(gram) == 4:
            assert got == (want, 4), gram
            checked += 1
    assert checked > 5


def test_predicts_a_learned_continuation() -> None:
    cache = NgramCache(slots=1 << 12)
    phrase = [11, 12, 13, 14, 15, 16, 17, 18]
    cache.learn([*phrase, 99, *phrase, 98])  # every 4-gram of the phrase seen twice, same follower
    assert cache.predict([5, 11, 12, 13, 14], 3) == ([15, 16, 17], 4)
    assert cache.predict([5, 6, 7], 3) == ([], 0)  # nothing learned after these


def test_a_follower_seen_once_is_not_proposed() -> None:
    """One sighting is below every bar (a 4-gram needs a margin of 2): no guess from noise."""
    cache = NgramCache(slots=1 << 12)
    cache.learn([1, 2, 3, 4, 5])
    assert cache.predict([1, 2, 3, 4], 2) == ([], 0)


def test_a_disputed_follower_is_not_proposed() -> None:
    cache = NgramCache(slots=1 << 12)
    cache.learn([1, 2, 3, 4, 7, 0, 1, 2, 3, 4, 8, 0, 1, 2, 3, 4, 7, 0, 1, 2, 3, 4, 8])
    assert cache.next_token([1, 2, 3, 4]) is None  # 7 and 8 twice each: no majority


def test_size_is_bounded_and_old_entries_give_way() -> None:
    """A tiny table keeps its size whatever it learns; recent text wins the slots."""
    cache = NgramCache(slots=1 << 6)
    rng = np.random.default_rng(2)
    cache.learn([int(t) for t in rng.integers(0, 5000, size=5000)])  # fill it with noise
    assert cache.tag.shape == (64,) and cache.used <= 64
    phrase = [7, 8, 9, 10, 11, 12]
    for _ in range(6):
        cache.learn(phrase + [int(t) for t in rng.integers(0, 5000, size=3)])
    assert cache.predict([7, 8, 9, 10], 2) == ([11, 12], 4)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError):
        NgramCache(slots=1000)
    cache = NgramCache(slots=1 << 4)
    with pytest.raises(ValueError):
        cache.load_arrays({"tag": np.zeros(8, np.int32), "tok": np.zeros(16, np.int32),
                           "cnt": np.zeros(16, np.int16)}, 0)


# -- the file ------------------------------------------------------------------

def learned_store(path: Path) -> NgramStore:
    store = NgramStore(path, "model.gguf", slots=1 << 12)
    phrase = [21, 22, 23, 24, 25, 26]
    store.learn_reply([*phrase, 1, *phrase, 2, *phrase])
    store.flush()
    return store


def test_saved_after_a_reply_and_loaded_again(tmp_path: Path) -> None:
    path = tmp_path / "ngrams" / "t.npz"
    store = learned_store(path)
    assert path.exists() and not list(path.parent.glob("*.specula-tmp"))  # no temp left
    again = NgramStore(path, "model.gguf", slots=1 << 12)
    assert again.notice == ""
    assert again.cache.predict([21, 22, 23, 24], 2) == ([25, 26], 4)
    assert again.cache.learned == store.cache.learned > 0
    assert np.array_equal(again.cache.tag, store.cache.tag)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong-format", "wrong-shape"])
def test_a_damaged_file_is_set_aside_with_a_notice(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "t.npz"
    learned_store(path)
    if damage == "garbage":
        path.write_bytes(b"not a numpy file at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    else:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays["meta"]))
        if damage == "wrong-format":
            meta["format"] = 99
        else:
            arrays["cnt"] = arrays["cnt"][:10]
        arrays["meta"] = np.array(json.dumps(meta))
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    store = NgramStore(path, "model.gguf", slots=1 << 12)
    assert "could not be read" in store.notice and "model.gguf" in store.notice
    assert store.cache.used == 0 and not path.exists()
    aside = list(tmp_path.glob("t.bad-*.npz"))
    assert len(aside) == 1 and aside[0].stat().st_size > 0  # nothing lost: kept for a look
    store.learn_reply([1, 2, 3, 4, 5])  # and the cache works again
    store.flush()
    assert NgramStore(path, "model.gguf", slots=1 << 12).notice == ""


def test_a_chat_turn_learns_only_what_is_new(tmp_path: Path) -> None:
    store = NgramStore(tmp_path / "t.npz", "m", slots=1 << 12)
    turn1 = [5, 6, 7, 8, 9, 10]
    store.learn_reply(turn1)
    before = store.cache.learned
    store.learn_reply([*turn1, 11, 12])  # the next turn repeats the first in its prompt
    assert store.cache.learned - before == 2
    store.learning = False
    store.learn_reply([40, 41, 42])
    assert store.cache.learned - before == 2


def test_listing_and_clearing(specula_home: Path) -> None:
    from specula.core.engine.drafters.ngram_store import cache_dir
    learned_store(cache_dir() / "a.npz")
    (cache_dir() / "b.npz").write_bytes(b"damaged")
    files = {f.path.name: f for f in list_caches()}
    assert files["a.npz"].target == "model.gguf" and files["a.npz"].learned > 0
    assert files["b.npz"].target == "(unreadable)"
    assert clear_caches() == 2 and list_caches() == []


# -- lookup's fallback ---------------------------------------------------------------

def request(committed: list[int], k: int, planned: list[int] | None = None) -> DraftRequest:
    return DraftRequest(committed=committed, k=k, params=SamplingParams(), seed=0,
                        rng=np.random.default_rng(0), keep=lambda i, p, h: (True, True),
                        lookup_tokens=planned or [])


def test_lookup_falls_back_to_the_cache() -> None:
    cache = NgramCache(slots=1 << 12)
    phrase = [31, 32, 33, 34, 35, 36, 37]
    cache.learn([*phrase, 0, *phrase])
    lk = LookupDrafter(cache=cache)
    # nothing in this conversation repeats: the cache answers, with its own match code
    assert lk.match([90, 31, 32, 33, 34], 3) == ([35, 36, 37], CACHE_MATCH + 4)
    # the conversation's own match of 2+ tokens comes first
    convo = [31, 32, 50, 51, 52, 9, 31, 32]
    assert lk.match(convo, 2) == ([50, 51], 2)
    assert LookupDrafter().match([90, 31, 32, 33, 34], 3) == ([], 0)


def test_a_planned_proposal_keeps_its_match_code() -> None:
    """The policy learns acceptance per match code: the proposal must carry the code
    of the preview it was planned from, not 0."""
    cache = NgramCache(slots=1 << 12)
    cache.learn([31, 32, 33, 34, 35, 36, 0, 31, 32, 33, 34, 35, 36])
    lk = LookupDrafter(cache=cache)
    committed = [90, 31, 32, 33, 34]
    toks, code = lk.preview(committed, 2)
    prop = lk.propose(request(committed, 2, planned=toks[:1]))
    assert prop.tokens == [35] and prop.match_len == code == CACHE_MATCH + 4
    seq = [1, 2, 3, 9, 1, 2, 3]
    toks, code = lk.preview(seq, 2)
    assert lk.propose(request(seq, 2, planned=toks)).match_len == code == 3
    assert lk.propose(request(seq, 2, planned=[5])).match_len == 0  # not what was previewed


def test_a_long_copy_reports_a_higher_match_code_than_a_stock_phrase() -> None:
    """The code of a 4-token match grows with how far back the earlier occurrence agrees
    (4-7, 8-15, 16-31, 32+ tokens), counted here by hand."""
    lk = LookupDrafter()
    pasted = list(range(100, 160))
    assert lk.match([*pasted, 1, *pasted[:6]], 2) == ([106, 107], 4)  # 6 tokens agree
    assert lk.match([*pasted, 1, *pasted[:9]], 2) == ([109, 110], 5)  # 9
    assert lk.match([*pasted, 1, *pasted[:20]], 2) == ([120, 121], 6)  # 20
    assert lk.match([*pasted, 1, *pasted[:40]], 2) == ([140, 141], 7)  # 40
    assert lk.match([7, 1, 2, 3, 4, 9, 8, 1, 2, 3, 4], 1) == ([9], 4)  # only the 4-gram


# a learn: a short pattern repeated (counts that clear the bars); a query: a context
_patterned = st.tuples(st.lists(st.integers(0, 2), min_size=2, max_size=4), st.integers(3, 8))
_ops = st.lists(st.one_of(st.tuples(st.just(True), _patterned.map(lambda pr: pr[0] * pr[1])),
                          st.tuples(st.just(False), st.lists(st.integers(0, 2), min_size=1, max_size=6))),
                min_size=1, max_size=14)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_remembered_answers_are_forgotten_when_the_table_changes(ops) -> None:  # type: ignore[no-untyped-def]
    """next_token remembers its answers by context; after each learn (or clear) they must
    be what a cache that never answered anything gives (the same learning replayed)."""
    cache = NgramCache(slots=64)
    learned: list[list[int]] = []
    for is_learn, toks in ops:
        if is_learn:
            cache.learn(toks)
            learned.append(toks)
            continue
        fresh = NgramCache(slots=64)
        for chunk in learned:
            fresh.learn(chunk)
        for end in range(1, len(toks) + 1):
            assert cache.next_token(toks[:end]) == fresh.next_token(toks[:end])
        assert cache.predict(toks, 5) == fresh.predict(toks, 5)
    cache.clear()
    assert all(cache.next_token(t) is None for _, t in ops)


def test_an_answer_given_before_more_learning_is_not_given_after_it() -> None:
    cache = NgramCache(slots=64)
    cache.learn([1, 2, 3] * 6)
    assert cache.next_token([1, 2]) == (3, 2)
    cache.learn([1, 2, 4] * 20)  # 4 now follows (1, 2) by a wide majority
    fresh = NgramCache(slots=64)
    fresh.learn([1, 2, 3] * 6)
    fresh.learn([1, 2, 4] * 20)
    assert cache.next_token([1, 2]) == fresh.next_token([1, 2]) == (4, 1)
    cache.clear()
    assert cache.next_token([1, 2]) is None
