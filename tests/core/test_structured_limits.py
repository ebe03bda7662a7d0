"""The schema converter and the GBNF check refuse by name, before llama.cpp parses
anything, what it cannot enforce or what would cost the engine without bound
(issue 24: a bound turned into N nested groups crashed the parser's recursion)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from specula.core.engine.grammar.json_schema import schema_to_gbnf
from specula.core.engine.grammar.json_schema_limits import (
    MAX_ALTERNATIVES,
    MAX_ENUM,
    MAX_NESTING,
    MAX_REPEAT,
    GrammarLimitError,
    SchemaError,
    check_gbnf,
)
from specula.core.structured import StructureError, forced_call_grammar, schema_grammar

REFUSED = [  # (schema, the keyword the refusal names)
    ({"type": "string", "maxLength": 30000}, "maxLength"),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 100000}, "maxItems"),
    ({"type": "string", "minLength": 1000000000}, "minLength"),
    ({"type": "string", "pattern": "^a{100000000}$"}, "pattern"),
    ({"type": "string", "pattern": "^" + "(a{2000}b{2000}){2000}" * 4 + "$"}, "pattern"),
    ({"enum": list(range(MAX_ENUM + 1))}, "enum"),
    ({"allOf": [{"type": "string"}, {"maxLength": 2}]}, "allOf"),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "oneOf"),
    ({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 1}]}, "oneOf"),
    ({"type": "string", "pattern": "^a+$", "minLength": 3}, "pattern"),
    ({"type": "array", "minItems": 2, "maxItems": 1}, "maxItems"),
    ({"type": "string", "minLength": 3, "maxLength": 2}, "maxLength"),
    ({"type": "array", "prefixItems": [{}], "items": False, "minItems": 2}, "minItems"),
    ({"type": "object", "properties": {}, "required": ["a"], "additionalProperties": False},
     "required"),
    ({"type": "string", "format": "email"}, "format"),
    ({"type": "integer", "minimum": 3}, "minimum"),
    ({"not": {"type": "string"}}, "not"),
    ({"type": "object", "anyOf": [{"required": ["a"]}]}, "anyOf"),
    ({"$ref": "https://example.com/s.json"}, "$ref"),
    ({"$ref": "#/$defs/missing"}, "$ref"),
    ({"type": "array", "items": [{"type": "string"}]}, "items"),
    ({"type": "frob"}, "type"),
    ({"type": "string", "pattern": "^(?=a)a$"}, "pattern"),
    ({"type": "string", "pattern": "^a{,5}$"}, "pattern"),
    ({"type": "string", "pattern": "^\\bx$"}, "pattern"),
    ({"type": "object", "properties": {"a": False}, "required": ["a"]}, "required"),
    ({"properties": {"a": {"x-unknown": 1}}}, "x-unknown"),
]


@pytest.mark.parametrize(("schema", "keyword"), REFUSED)
def test_a_schema_that_cannot_be_enforced_is_refused_by_its_keyword(schema: Any,
                                                                    keyword: str) -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_gbnf(schema)
    assert info.value.keyword == keyword, str(info.value)
    with pytest.raises(StructureError) as outer:  # and the request field is named too
        schema_grammar(schema, "response_format.json_schema.schema")
    assert outer.value.param == "response_format.json_schema.schema"
    assert f"'{keyword}'" in str(outer.value)


def test_deep_schemas_are_refused_without_recursing_past_the_limit() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(SchemaError, match=f"deeper than {MAX_NESTING}"):
        schema_to_gbnf(schema)


SCALED: list[Callable[[int], dict[str, Any]]] = [
    lambda n: {"type": "string", "maxLength": n},
    lambda n: {"type": "string", "minLength": n, "maxLength": n},
    lambda n: {"type": "array", "items": {"type": "integer"}, "maxItems": n},
    lambda n: {"type": "string", "pattern": f"^a{{{n}}}$"},
    lambda n: {"type": "string", "pattern": f"^[a-z]{{2,{n}}}$"},
]


@pytest.mark.parametrize("schema", SCALED)
def test_a_grammar_does_not_grow_with_its_bounds(schema: Callable[[int], dict[str, Any]]) -> None:
    """A bound is one {m,n} in the text: the grammar for N = 2000 is the one for N = 10
    with the numbers changed (the old converter wrote N nested groups)."""
    def shape(text: str) -> str:
        return re.sub(r"\{\d+(,\d*)?\}", "{m,n}", text)
    small, large = schema_to_gbnf(schema(10)), schema_to_gbnf(schema(MAX_REPEAT))
    assert str(MAX_REPEAT) in large or str(MAX_REPEAT - 1) in large
    assert shape(large) == shape(small)


def test_a_bound_of_two_thousand_is_enforced_and_one_more_is_refused() -> None:
    schema_to_gbnf({"type": "string", "maxLength": MAX_REPEAT})
    with pytest.raises(SchemaError, match="above 2000"):
        schema_to_gbnf({"type": "string", "maxLength": MAX_REPEAT + 1})


def test_the_bounds_of_one_schema_have_a_budget() -> None:
    props = {f"p{i}": {"type": "string", "minLength": i, "maxLength": 2000} for i in range(20)}
    with pytest.raises(SchemaError, match="add up"):
        schema_to_gbnf({"type": "object", "properties": props})


def test_a_tool_parameter_past_a_limit_names_the_tool() -> None:
    from specula.core.chat.tool_calls import HERMES
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "maxLength": 30000}}}}}]
    with pytest.raises(StructureError) as info:
        forced_call_grammar(HERMES, tools)
    assert info.value.param == "tools[0].function.parameters"
    assert "'maxLength'" in str(info.value)


GBNF_REFUSED = [
    ("root ::= " + "(" * 100_000 + '"a"' + ")" * 100_000, "nests"),
    ('root ::= "a"{1000}{1000}', "expands"),
    ('root ::= "a"{3000}', "above 2000"),
    ('root ::= x{2000}\nx ::= "a"{2000}{0,100}', "expands"),
    ("root ::= " + " | ".join(f'"{i}"' for i in range(MAX_ALTERNATIVES + 1)), "alternatives"),
    ("\n".join(f'r{i} ::= "a"' for i in range(5000)), "rules"),
    ('root ::= "' + "a" * 300_000 + '"', "characters"),
]


@pytest.mark.parametrize(("text", "reason"), GBNF_REFUSED)
def test_a_costly_gbnf_is_refused_before_llama_cpp_parses_it(text: str, reason: str) -> None:
    with pytest.raises(GrammarLimitError, match=reason):
        check_gbnf(text)


@pytest.mark.parametrize("text", [
    'root ::= "a"{2000}', 'root ::= ("ab" | [c-d]){0,2000} x*\nx ::= "y"+',
    'root ::= "{" # a comment with ( and {99999}\n "}"', 'root ::= "(((" [(] "\\""',
])
def test_ordinary_gbnf_passes_the_check(text: str) -> None:
    check_gbnf(text)
