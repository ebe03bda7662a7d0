"""The grammar API: errors are clear and come before any token; JSON helpers."""

from __future__ import annotations

import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.grammar import state as G
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, run


@pytest.mark.parametrize(
    ("text", "root", "reason"),
    [
        ("root ::= foo", "root", "Undefined rule identifier 'foo'"),
        ('item ::= "a"', "root", "does not contain a 'root' symbol"),
        ('root ::= "a"', "start", "does not contain a 'start' symbol"),
        ('root ::= root "a"', "root", "left recursion"),
        ("root ::= [a-", "root", "unexpected end of input"),
        ("", "root", "empty"),
        # llama.cpp would admit "an" after "a" here and abort the process accepting it
        ('root ::= "a" !<[5]> "z"', "root", "negated token references"),
    ],
)
def test_bad_grammar_says_why(text: str, root: str, reason: str) -> None:
    with pytest.raises(G.GrammarError, match=reason):
        G.validate_grammar(text, root)


def test_good_grammars_validate() -> None:
    G.validate_grammar('root ::= "yes" | "no"')
    G.validate_grammar('start ::= "a"+', "start")
    G.validate_grammar(G.JSON_OBJECT_GRAMMAR)
    G.validate_grammar(G.json_schema_grammar({"type": "object", "properties": {"a": {"enum": [1, 2]}}}))


@pytest.mark.parametrize("feature", ["minimum", "uniqueItems", "patternProperties", "not"])
def test_unsupported_schema_feature_is_named(feature: str) -> None:
    value: object = {"minimum": 1, "uniqueItems": True, "patternProperties": {"^a": {}},
                     "not": {"type": "null"}}[feature]
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {feature: value}}}}
    with pytest.raises(G.GrammarError, match=f"'{feature}' at #/properties/xs/items"):
        G.json_schema_grammar(schema)


def test_malformed_schema_is_a_grammar_error() -> None:
    with pytest.raises(G.GrammarError, match="keyword 'type' at #: unknown type 'frob'"):
        G.json_schema_grammar({"type": "frob"})
    with pytest.raises(G.GrammarError, match="keyword '\\$ref' at #: only references inside"):
        G.json_schema_grammar({"$ref": "https://example.com/s.json"})


def test_bad_grammar_generates_nothing_and_engine_stays_usable(engine: Engine) -> None:
    bad = SamplingParams(max_tokens=8, grammar="root ::= (")
    with pytest.raises(G.GrammarError, match="Invalid grammar"):
        engine.generate_tokens([1, 5, 6], bad, PLAIN)
    with pytest.raises(G.GrammarError):  # the generator itself refuses it too, at its start
        next(iter(engine._gen.generate([1, 5, 6], bad, PLAIN, engine.policy_for(PLAIN))))  # type: ignore[union-attr]
    done, toks = run(engine, "lorem", SamplingParams(max_tokens=5), PLAIN)
    assert done.stats.tokens == 5 and len(toks) == 5


@pytest.mark.parametrize("n", [-1, 21])
def test_logprobs_range(n: int) -> None:
    with pytest.raises(ValueError, match="logprobs"):
        SamplingParams(logprobs=n)


def test_to_dict_carries_the_new_fields() -> None:
    d = SamplingParams(grammar='root ::= "a"', grammar_root="root", logprobs=3).to_dict()
    assert (d["grammar"], d["grammar_root"], d["logprobs"]) == ('root ::= "a"', "root", 3)


def test_token_references_need_the_vocabulary(engine: Engine) -> None:
    """``<|im_start|>`` is looked up in the target's vocabulary (``<[id]>`` needs none)."""
    G.validate_grammar('root ::= <[5]> "a"')
    text = 'root ::= <|im_start|> "a"'
    engine.validate_grammar(text)
    with pytest.raises(G.GrammarError, match="invalid token"):
        engine.validate_grammar('root ::= <|no such token|> "a"')
    with pytest.raises(G.GrammarError, match="no vocab"):
        G.validate_grammar(text)
