"""Tool calls in the Hermes / Qwen format: parsing whole and streamed replies, forcing a call."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specula.core.chat.tool_calls import (
    CALL_ROOT,
    HERMES,
    CallStream,
    ToolCall,
    call_grammar,
    call_schema,
    detect_format,
    parse_reply,
)
from specula_tools.tiny_models import CHATML_TEMPLATE

QWEN = (Path(__file__).parents[2] / "fixtures" / "qwen25_chat_template.jinja").read_text()


def ids() -> itertools.count[str]:  # type: ignore[type-var]
    return (f"call_{i}" for i in itertools.count())  # type: ignore[return-value]


def _block(name: str, args: object) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'


def _stream(text: str, cuts: list[int]) -> tuple[str, list[ToolCall], dict[int, dict[str, str]]]:
    """Feed ``text`` cut at ``cuts``; (content, calls, per-index id/name/arguments from deltas)."""
    s = CallStream(HERMES, new_id=ids().__next__)
    bounds = [0, *sorted(set(cuts)), len(text)]
    deltas = []
    for a, b in itertools.pairwise(bounds):
        deltas += s.feed(text[a:b])
    deltas += s.finish()
    content = "".join(d.content for d in deltas if d.content is not None)
    built: dict[int, dict[str, str]] = {}
    for d in deltas:
        if d.is_call:
            c = built.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            if d.id is not None:
                assert not c["id"], "a call is opened once"
                c["id"], c["name"] = d.id, d.name or ""
            c["arguments"] += d.arguments
    return content, s.calls, built


def test_detects_the_family_from_the_template() -> None:
    assert detect_format(QWEN) is HERMES
    assert detect_format(CHATML_TEMPLATE) is None
    assert detect_format(None) is None


def test_a_reply_with_text_and_two_calls() -> None:
    args = {"city": 'Pa}ris "x"', "days": [1, {"n": 2}], "s": "a\\"}
    text = "Let me check.\n" + _block("get_weather", args) + "\n" + _block("noop", {}) + "\n"
    content, calls = parse_reply(HERMES, text, ids().__next__)
    assert content == "Let me check."
    assert [(c.id, c.name) for c in calls] == [("call_0", "get_weather"), ("call_1", "noop")]
    assert json.loads(calls[0].arguments) == args  # the model's own text, which parses back
    assert json.loads(calls[1].arguments) == {}


def test_a_reply_without_calls_keeps_every_character() -> None:
    assert parse_reply(HERMES, "plain text\n\n") == ("plain text\n\n", [])
    assert parse_reply(HERMES, "a < b and <tool") == ("a < b and <tool", [])


def test_other_key_order_and_parameters_are_read_whole() -> None:
    text = '<tool_call>\n{"arguments": {"q": 1}, "name": "find"}\n</tool_call>'
    _, calls = parse_reply(HERMES, text, ids().__next__)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("find", {"q": 1})]
    text = '<tool_call>{"name": "find", "parameters": {"q": 2}}</tool_call>'
    assert json.loads(parse_reply(HERMES, text)[1][0].arguments) == {"q": 2}


def test_a_block_that_is_not_a_call_is_given_back_as_content() -> None:
    text = "x <tool_call>not json</tool_call> y"
    assert parse_reply(HERMES, text) == (text, [])


def test_a_reply_cut_inside_a_call_keeps_what_was_written() -> None:
    content, calls = parse_reply(HERMES, 'ok <tool_call>\n{"name": "f", "arguments": {"a": [1, 2')
    assert content == "ok" and calls[0].name == "f" and calls[0].arguments == '{"a": [1, 2'


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=400), max_size=30),
       st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20))
def test_every_split_of_a_stream_gives_the_whole_reply(cuts: list[int], s: str) -> None:
    """However the text arrives (one character at a time, or in odd pieces), the deltas
    rebuild exactly the calls and content of the whole reply."""
    args = {"s": s, "n": [1, {"k": "}"}], "t": True}
    text = f"Intro {s!r}\n" + _block("f", args) + "\n" + _block("g", {"x": s}) + "\nbye"
    whole_content, whole_calls = parse_reply(HERMES, text, ids().__next__)
    content, calls, built = _stream(text, [c for c in cuts if c < len(text)])
    assert content == whole_content
    assert calls == whole_calls
    assert [built[i] for i in sorted(built)] == [
        {"id": c.id, "name": c.name, "arguments": c.arguments} for c in whole_calls]
    assert json.loads(built[0]["arguments"]) == args


def test_call_schema_names_the_function_and_takes_its_parameters() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [{"type": "function", "function": {"name": "a", "parameters": params}},
             {"type": "function", "function": {"name": "b"}}]
    one = call_schema(tools, "a")
    assert one["properties"] == {"name": {"const": "a"}, "arguments": params}
    both = call_schema(tools)
    assert [v["properties"]["name"]["const"] for v in both["anyOf"]] == ["a", "b"]
    with pytest.raises(ValueError):
        call_schema(tools, "missing")


def test_call_grammar_wraps_the_object_under_its_own_root() -> None:
    grammar, root = call_grammar(HERMES, 'root ::= "{}"')
    assert root == CALL_ROOT
    assert grammar.endswith(f'{CALL_ROOT} ::= "<tool_call>\\n" root "\\n</tool_call>"\n')
    many, _ = call_grammar(HERMES, 'root ::= "{}"', parallel=True)
    assert many.rstrip().endswith('("\\n" "<tool_call>\\n" root "\\n</tool_call>")*')


def test_a_name_with_escapes_json_does_not_have_is_read_as_text() -> None:
    text = '<tool_call>\n{"name": "f\\q", "arguments": {}}\n</tool_call>'
    assert parse_reply(HERMES, text) == (text, [])
