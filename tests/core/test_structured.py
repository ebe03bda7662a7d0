"""response_format and forced calls -> grammars, checked with llama.cpp's grammar sampler."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.chat.tool_calls import HERMES
from specula.core.engine.grammar.compile import JSON_OBJECT_GRAMMAR
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.native.llama import Model
from specula.core.structured import (
    StructureError,
    forced_call_grammar,
    response_format_grammar,
    schema_grammar,
)


@pytest.fixture(scope="module")
def model(tiny: dict[str, Path]) -> Iterator[Model]:
    m = Model(tiny["target"], vocab_only=True)
    yield m
    m.close()


def _accepts(model: Model, grammar: str, text: str | bytes, root: str = "root") -> bool:
    """Whether the grammar takes ``text`` byte token by byte token and is then complete."""
    byte_id = {model.piece(i): i for i in range(model.n_vocab)}
    state = GrammarState.open(model.vocab, model.n_vocab, grammar, root)
    try:
        for b in text.encode() if isinstance(text, str) else text:
            if not state.try_advance(byte_id[bytes([b])]):
                return False
        return state.allows(model.eos)
    finally:
        state.close()


def test_json_strings_refuse_raw_control_characters(model: Model) -> None:
    """JSON forbids U+0000-U+001F unescaped in a string; llama-cpp-python's converter
    allowed them (a reply no JSON parser reads), the tightened rule does not."""
    g = schema_grammar({"type": "object", "properties": {"s": {"type": "string"}}}, "x")
    assert _accepts(model, g, '{"s": "a\\nb"}')
    assert not _accepts(model, g, '{"s": "a\x13b"}')
    assert not _accepts(model, g, '{"s": "a\nb"}')


def test_json_strings_refuse_bytes_that_are_not_utf8(model: Model) -> None:
    """A lead byte F5-FF or a surrogate: llama.cpp's grammar decodes them as code points,
    JSON parsers refuse them (or count each byte as U+FFFD, past a maxLength)."""
    g = schema_grammar({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}},
                       "x")
    assert _accepts(model, g, '{"s": "a􏿿é"}'.encode())
    assert not _accepts(model, g, b'{"s": "a\xf6\x9f\xa0\x81"}')  # above U+10FFFF
    assert not _accepts(model, g, b'{"s": "a\xfe\x9f\xbf\x84"}')  # no UTF-8 lead byte
    assert not _accepts(model, g, b'{"s": "a\xed\xa0\x80"}')  # a surrogate


def test_four_byte_sequences_are_accepted_exactly_when_they_are_utf8(model: Model) -> None:
    """Every lead byte F0-F7 with every second byte, against Python's own UTF-8 decoder:
    plane 16 (F4 80-8F) in, F4 90-BF (past U+10FFFF) and F5-F7 out. F0 80-8F (overlong
    encodings) are left out: a grammar over code points cannot see them (see structured.py)."""
    g = schema_grammar({"type": "object", "properties": {"s": {"type": "string"}}}, "x")
    wrong = []
    for lead in range(0xF0, 0xF8):
        for second in range(0x80, 0xC0):
            if lead == 0xF0 and second < 0x90:
                continue
            seq = bytes([lead, second, 0x80, 0x80])
            try:
                seq.decode("utf-8")
                valid = True
            except UnicodeDecodeError:
                valid = False
            if _accepts(model, g, b'{"s": "' + seq + b'"}') != valid:
                wrong.append(seq.hex(" "))
    assert wrong == []


def test_response_formats(model: Model) -> None:
    assert response_format_grammar(None) is None
    assert response_format_grammar({"type": "text"}) is None
    assert response_format_grammar({"type": "json_object"}) == JSON_OBJECT_GRAMMAR
    g = response_format_grammar({"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"k": {"enum": ["a", "b"]}},
                                "required": ["k"]}}})
    assert g is not None
    assert _accepts(model, g, '{"k": "a"}') and not _accepts(model, g, '{"k": "c"}')


@pytest.mark.parametrize(("rf", "param"), [
    ({"type": "xml"}, "response_format.type"),
    ([], "response_format"),
    ({"type": "json_schema", "json_schema": {"schema": {}}}, "response_format.json_schema.name"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {}}}},
     "response_format.json_schema.schema"),
])
def test_refusals_name_the_field(rf: object, param: str) -> None:
    with pytest.raises(StructureError) as info:
        response_format_grammar(rf)
    assert info.value.param == param


def test_a_forced_call_admits_exactly_the_named_functions_calls(model: Model) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}},
             {"type": "function", "function": {"name": "g"}}]
    g, root = forced_call_grammar(HERMES, tools, "f")
    call = '<tool_call>\n{"name": "f", "arguments": {"n": 42}}\n</tool_call>'
    assert _accepts(model, g, call, root)
    assert not _accepts(model, g, call.replace('"f"', '"g"'), root)  # not the named one
    assert not _accepts(model, g, call.replace("42", '"x"'), root)  # arguments off-schema
    assert not _accepts(model, g, "Sure. " + call, root)  # a forced call comes first
    any_, root = forced_call_grammar(HERMES, tools, None, parallel=True)
    two = call + "\n" + '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'
    assert _accepts(model, any_, two, root)
    one, root = forced_call_grammar(HERMES, tools)
    assert not _accepts(model, one, two, root)  # one call unless parallel


def test_an_unsupported_parameters_schema_is_named() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}}}]
    with pytest.raises(StructureError) as info:
        forced_call_grammar(HERMES, tools, None)
    assert info.value.param == "tools[0].function.parameters"


# -- what llama-cpp-python's converter dropped or wrote wrongly (issue 24), now enforced --

ENFORCED = [  # (schema, a document it admits, a document it must refuse)
    ({"type": ["string"], "maxLength": 2}, '"ab"', '"abc"'),
    ({"type": ["integer"], "enum": [1, 2]}, "2", "8444444444"),
    ({"type": ["object"], "properties": {"a": {"type": "integer"}}, "required": ["a"]},
     '{"a": 1}', "{}"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]},
     '{"a": 1, "b": [true]}', '{"a": 1}'),
    ({"type": "string", "pattern": '^\\"$'}, '"\\""', '"""'),
    ({"type": "string", "pattern": "^a\\nb$"}, '"a\\nb"', '"a\nb"'),
    ({"type": "string", "pattern": "^[^a]$"}, '"\\\\"', '"\\"'),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 3},
     '[1, "x", null]', "[1]"),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 2000}, "[" + "1," * 1999 + "1]",
     "[" + "1," * 2000 + "1]"),
    ({"type": "string", "maxLength": 2000}, '"' + "a" * 2000 + '"', '"' + "a" * 2001 + '"'),
    ({"oneOf": [{"type": "string", "maxLength": 1}, {"type": "null"}]}, "null", '"ab"'),
    ({"type": "object", "properties": {'q"k': {"const": "\\"}}, "required": ['q"k']},
     '{"q\\"k": "\\\\"}', '{"q"k": "\\"}'),
]


@pytest.mark.parametrize(("schema", "good", "bad"), ENFORCED)
def test_every_keyword_is_enforced(model: Model, schema: dict[str, object], good: str,
                                   bad: str) -> None:
    g = schema_grammar(schema, "s")
    assert _accepts(model, g, good)
    assert not _accepts(model, g, bad)


def test_a_forced_call_with_a_pattern_writes_json_arguments(model: Model) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "pattern": '^\\"$'}},
        "required": ["a"]}}}]
    g, root = forced_call_grammar(HERMES, tools, "f")
    call = '<tool_call>\n{"name": "f", "arguments": {"a": "%s"}}\n</tool_call>'
    assert _accepts(model, g, call % '\\"', root)
    assert not _accepts(model, g, call % '"', root)
