"""Fuzzing the structured fields: whatever a client sends in response_format, tools,
tool_choice, logprobs or assistant tool_calls, the parser, the binding to Qwen2.5's
template and the render end in a result or a 400 naming a field, never another error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specula.core.chat.template import ChatTemplate
from specula.core.engine.config import SpecConfig
from specula.core.engine.sampling.rules import SamplingParams
from specula.server.errors import OpenAIError
from specula.server.jobs import render_chat
from specula.server.schemas import parse_request
from specula.server.structured import bind_tools

QWEN = ChatTemplate((Path(__file__).parents[1] / "fixtures" / "qwen25_chat_template.jinja")
                    .read_text(), "", "<|im_end|>", False)

scalars = st.none() | st.booleans() | st.integers(-3, 30) | st.text(max_size=8)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3)
                      | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=8)
schemas = st.recursive(
    st.fixed_dictionaries({}, optional={"type": st.sampled_from(
        ["string", "integer", "number", "boolean", "object", "array", "null", "nope"]),
        "enum": st.lists(scalars, max_size=3), "maxLength": st.integers(-1, 5)}),
    lambda c: st.fixed_dictionaries({}, optional={
        "type": st.just("object"), "properties": st.dictionaries(st.text(max_size=4), c,
                                                                 max_size=3),
        "required": st.lists(st.text(max_size=4), max_size=2), "items": c,
        "anyOf": st.lists(c, max_size=2), "not": c, "additionalProperties": st.booleans()}),
    max_leaves=6) | values
tools = st.lists(st.fixed_dictionaries({"type": st.just("function") | values, "function":
    st.fixed_dictionaries({"name": st.sampled_from(["f", "g", "bad name"]) | values},
                          optional={"parameters": schemas, "description": values})}),
    max_size=3) | values
choices = (st.sampled_from(["auto", "none", "required", "x"])
           | st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
               {"name": st.sampled_from(["f", "g", "h"]) | values})}) | values)
formats = (st.fixed_dictionaries({"type": st.sampled_from(["text", "json_object", "json_schema",
                                                           "x"])},
                                 optional={"json_schema": st.fixed_dictionaries(
                                     {}, optional={"name": st.text(max_size=4) | values,
                                                   "schema": schemas, "strict": values})})
           | values)
calls = st.lists(st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=4) | values, "type": st.just("function"),
    "function": st.fixed_dictionaries({}, optional={
        "name": st.text(max_size=4) | values,
        "arguments": st.sampled_from(['{"a": 1}', "{", "[]", ""]) | values})}), max_size=2) | values
fields = st.fixed_dictionaries({}, optional={
    "response_format": formats, "tools": tools, "tool_choice": choices,
    "parallel_tool_calls": values, "logprobs": values, "top_logprobs": values,
    "specula": st.fixed_dictionaries({}, optional={"grammar": st.sampled_from(
        ['root ::= "x"', "root ::= [", 'a ::= "x"']) | values}),
    "assistant_calls": calls})


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields)
def test_structured_fields_end_in_a_result_or_a_400(extra: dict[str, Any]) -> None:
    msgs: list[Any] = [{"role": "user", "content": "hi"}]
    if "assistant_calls" in extra:
        msgs += [{"role": "assistant", "content": None, "tool_calls": extra.pop("assistant_calls")},
                 {"role": "tool", "tool_call_id": "c", "content": "42"}]
    body = {"model": "m", "messages": msgs, **extra}
    try:
        req = parse_request("chat", body, SamplingParams(), SpecConfig())
        bind_tools(req, QWEN)
        render_chat(QWEN, req, 4096, 5.0)
    except OpenAIError as exc:
        assert exc.status == 400 and exc.param, exc.message
        return
    grammar = req.sampling.grammar
    assert grammar is None or grammar == req.structure.grammar or \
        req.structure.tool_choice in ("required", "function")
