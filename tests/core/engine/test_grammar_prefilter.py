"""The full-vocabulary check's first-byte prefilter changes nothing: along random walks
through several grammars, the allowed set with the prefilter equals llama.cpp's own
answer over every token, on the tiny vocabulary and on real ones (Qwen2.5's 152k
byte-level BPE, Gemma 3's SentencePiece with byte fallback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.grammar import state as G
from specula.core.engine.native.llama import Model
from tests.conftest import real_model
from tests.core.engine.grammar_lang import LETTERS, SMALL_GBNF

SCHEMA = G.json_schema_grammar({
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer"},
                   "kind": {"enum": ["a b", "ü", "日本"]}, "xs": {"type": "array", "items": {"type": "boolean"}}},
    "required": ["name", "n", "kind", "xs"],
})
GRAMMARS = [G.JSON_OBJECT_GRAMMAR, SCHEMA, LETTERS.gbnf, SMALL_GBNF, 'root ::= [^a-z]{2,5} "!"']


@pytest.fixture(scope="module")
def vocab(tiny: dict[str, Path]) -> Iterator[Model]:
    """The tiny target's vocabulary (no weights loaded)."""
    model = Model(tiny["target"], vocab_only=True)
    yield model
    model.close()


def walk_and_compare(model: Model, text: str, steps: int, seed: int) -> tuple[int, int]:
    """(positions compared, tokens the prefilter spared checking)."""
    rng = np.random.default_rng(seed)
    n = model.n_vocab
    st = G.GrammarState.open(model.vocab, n, text, owner=model)
    spared = compared = 0
    try:
        for _ in range(steps):
            before = st.checked
            fast = st.allowed_all(n)
            used = st.checked - before
            direct_ok = st.allowed(np.arange(n, dtype=np.int64))
            assert np.array_equal(fast, np.flatnonzero(direct_ok)), (text[:30], compared)
            spared += n - used
            compared += 1
            moves = [t for t in fast.tolist() if not model.is_eog(t)]
            if not moves:
                break
            st.advance(int(rng.choice(moves)))
    finally:
        st.close()
    return compared, spared


@pytest.mark.parametrize("text", GRAMMARS, ids=["json", "schema", "letters", "small", "negated"])
def test_prefilter_is_exact_on_the_tiny_vocabulary(vocab: Model, text: str) -> None:
    compared = sum(walk_and_compare(vocab, text, 12, seed)[0] for seed in range(4))
    assert compared >= 8


@pytest.mark.real_models
@pytest.mark.parametrize("name", ["qwen-0.5b", "gemma"])
def test_prefilter_is_exact_on_real_vocabularies(name: str) -> None:
    model = Model(real_model(name), vocab_only=True)
    try:
        spared = total = 0
        for i, text in enumerate(GRAMMARS):
            c, s = walk_and_compare(model, text, 6, i)
            spared += s
            total += c * model.n_vocab
        print(f"{name}: the prefilter spared {spared / total:.0%} of the tokens checked")
        assert spared > 0.3 * total
    finally:
        model.close()


def test_a_wrong_table_is_caught(vocab: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: a prefilter that forgets one byte's tokens is seen by the comparison."""
    table = G.FirstBytes.of(vocab, vocab.vocab, vocab.n_vocab)
    monkeypatch.setattr(table, "always", table.always & (table.first != ord("z")))
    monkeypatch.setattr(table, "single", np.where(np.arange(256) == ord("z"), -1, table.single))
    with pytest.raises(AssertionError):
        walk_and_compare(vocab, LETTERS.gbnf, 3, 0)


# (Not "!<[5]>" after a literal: llama.cpp's apply then admits a token whose text runs
# from the literal into the reference, which its accept refuses by aborting.)
TOKEN_REFS = 'root ::= "x" <|im_start|> "y" | <[5]> [<!]'


def test_a_grammar_that_names_tokens_is_checked_by_id(vocab: Model) -> None:
    """A token reference matches a token by id, not by its text: the first-byte table
    would refuse <|im_start|> where only that token may come (its first byte '<' alone
    is not allowed there), so such a grammar is checked over every token."""
    compared = sum(walk_and_compare(vocab, TOKEN_REFS, 4, seed)[0] for seed in range(6))
    assert compared >= 12


@pytest.mark.parametrize(("text", "refs"), [
    (TOKEN_REFS, True), ('root ::= !<[5]>', True), ('root ::= "<|im_start|>" [!<]', False),
    ('root ::= "a\\"<" # <[5]>\n  x\nx ::= [\\]<]', False), (G.JSON_OBJECT_GRAMMAR, False), (SCHEMA, False),
])
def test_token_references_are_found_as_llama_cpp_parses_them(text: str, refs: bool) -> None:
    assert G.has_token_refs(text) is refs
