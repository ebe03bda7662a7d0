"""Tool calls through the official openai client: forced calls, a round trip, streaming.

The server runs the tiny pair with Qwen2.5's real chat template; tool_choice
"required" or a named function makes the grammar write the call, so the random
model's reply is a call whose arguments validate against the function's schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specula.core.engine.native.llama import Model
from specula.server import LocalServer
from tests.server.conftest import post

MODEL = "tiny-target"
WEATHER = {"type": "object", "properties": {
    "city": {"enum": ["Paris", "Rome", "Oslo"]},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"}},
    "required": ["city", "unit", "days"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 10}},
        "required": ["zone"], "additionalProperties": False}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather forecast",
                                      "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time",
                                      "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
ASK = [{"role": "user", "content": "What is the weather in Paris for 3 days?"}]


def _chat(client: Any, **kw: Any) -> Any:
    args: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 200,
                            "temperature": 0, "tools": TOOLS}
    args.update(kw)
    return client.chat.completions.create(**args)


def _check_call(call: Any, name: str | None = None) -> dict[str, Any]:
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name in SCHEMAS and (name is None or call.function.name == name)
    args = json.loads(call.function.arguments)
    jsonschema.validate(args, SCHEMAS[call.function.name])
    return dict(args)


@pytest.mark.parametrize("choice", ["required", "get_weather", "get_time"])
def test_a_forced_call_names_a_tool_with_valid_arguments(tool_client: Any, choice: str) -> None:
    tc = choice if choice == "required" else {"type": "function", "function": {"name": choice}}
    resp = _chat(tool_client, tool_choice=tc)
    msg = resp.choices[0].message
    assert resp.choices[0].finish_reason == "tool_calls"
    assert msg.content is None and len(msg.tool_calls) == 1
    _check_call(msg.tool_calls[0], None if choice == "required" else choice)
    assert resp.model_extra["specula"]["drafted"] > 0  # drafted under the grammar


def test_a_forced_call_is_the_same_with_and_without_the_draft(tool_client: Any) -> None:
    plain = _chat(tool_client, tool_choice="required", extra_body={"specula": {"mode": "plain"}})
    chain = _chat(tool_client, tool_choice="required")
    a, b = plain.choices[0].message.tool_calls[0], chain.choices[0].message.tool_calls[0]
    assert (a.function.name, a.function.arguments) == (b.function.name, b.function.arguments)


def test_parallel_calls_when_asked(tool_client: Any) -> None:
    resp = _chat(tool_client, tool_choice="required", parallel_tool_calls=True, max_tokens=400)
    calls = resp.choices[0].message.tool_calls
    assert calls and len({c.id for c in calls}) == len(calls)
    for call in calls:
        _check_call(call)


def _prompt_tokens(path: Path, text: str) -> int:
    model = Model(path, vocab_only=True)
    try:
        return len(model.tokenize(text, add_special=True, parse_special=True))
    finally:
        model.close()


def test_a_round_trip_call_result_answer(tool_client: Any, qwen_pair: dict[str, Path]) -> None:
    """The call, the tool's result in the history, then the final answer; the second
    prompt is exactly the Qwen format written out by hand (counted in tokens)."""
    first = _chat(tool_client, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = first.choices[0].message.tool_calls[0]
    args = _check_call(call, "get_weather")
    history = [*ASK, first.choices[0].message.model_dump(exclude_none=True),
               {"role": "tool", "tool_call_id": call.id, "content": '{"temp": 21}'}]
    final = _chat(tool_client, messages=history, tool_choice="none", max_tokens=16)
    assert final.choices[0].finish_reason in ("stop", "length")
    assert final.choices[0].message.tool_calls is None
    assert isinstance(final.choices[0].message.content, str)
    # tool_choice "none" leaves the tools out of the prompt; the call and the result render.
    expected = (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nWhat is the weather in Paris for 3 days?"
        "<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
        f'{{"name": "get_weather", "arguments": {json.dumps(args)}}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")
    assert final.usage.prompt_tokens == _prompt_tokens(qwen_pair["target"], expected)
    again = _chat(tool_client, messages=history, tool_choice="auto", max_tokens=16)
    assert again.usage.prompt_tokens > final.usage.prompt_tokens  # with the tools: longer


@pytest.mark.parametrize("choice", ["required", "get_time"])
def test_a_streamed_call_rebuilds_in_the_clients_stream_manager(tool_client: Any,
                                                                 choice: str) -> None:
    tc = choice if choice == "required" else {"type": "function", "function": {"name": choice}}
    whole = _chat(tool_client, tool_choice=tc).choices[0].message.tool_calls[0]
    with tool_client.chat.completions.stream(model=MODEL, messages=ASK, max_tokens=200,
                                             temperature=0, tools=TOOLS, tool_choice=tc) as s:
        deltas = [e for e in s if e.type == "tool_calls.function.arguments.delta"]
        final = s.get_final_completion()
    assert len(deltas) > 3  # the arguments came in pieces, as they were written
    choice_ = final.choices[0]
    assert choice_.finish_reason == "tool_calls"
    call = choice_.message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == (whole.function.name,
                                                             whole.function.arguments)
    _check_call(call)


def test_auto_reads_calls_out_of_text_and_streams_the_text_before(tool_client: Any) -> None:
    """tool_choice "auto" with a client grammar that writes some text, then a call."""
    grammar = ('root ::= "Checking. " "<tool_call>\\n{\\"name\\": \\"get_time\\", '
               '\\"arguments\\": {\\"zone\\": \\"" ("UTC" | "CET") "\\"}}\\n</tool_call>"')
    extra = {"specula": {"grammar": grammar}}
    whole = _chat(tool_client, tool_choice="auto", extra_body=extra)
    msg = whole.choices[0].message
    assert whole.choices[0].finish_reason == "tool_calls"
    assert msg.content == "Checking."
    assert _check_call(msg.tool_calls[0], "get_time")["zone"] in ("UTC", "CET")
    chunks = list(_chat(tool_client, tool_choice="auto", extra_body=extra, stream=True))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    args = "".join(tc.function.arguments or "" for c in chunks if c.choices
                   for tc in c.choices[0].delta.tool_calls or [])
    assert content == "Checking." and args == msg.tool_calls[0].function.arguments


def test_without_tools_asked_the_text_is_not_parsed(tool_client: Any) -> None:
    grammar = 'root ::= "<tool_call>\\n{\\"name\\": \\"get_time\\", \\"arguments\\": {}}\\n</tool_call>"'
    resp = _chat(tool_client, tools=None, extra_body={"specula": {"grammar": grammar}})
    assert resp.choices[0].message.tool_calls is None
    assert resp.choices[0].message.content.startswith("<tool_call>")


@pytest.mark.parametrize(("body", "param"), [
    ({"tools": {"a": 1}}, "tools"),
    ({"tools": [{"type": "function"}]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": {"name": "has space"}}]}, "tools[0].function.name"),
    ({"tools": TOOLS + TOOLS[:1]}, "tools[2].function.name"),
    ({"tools": TOOLS, "tool_choice": "always"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}}}}],
      "tool_choice": "required"}, "tools[0].function.parameters"),
    ({"tools": TOOLS, "response_format": {"type": "json_object"}}, "response_format"),
    ({"tools": TOOLS, "tool_choice": "required", "specula": {"grammar": 'root ::= "x"'}},
     "specula.grammar"),
    ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"messages": [{"role": "assistant", "tool_calls": "f()"}]}, "messages[0].tool_calls"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]},
     "messages[0].tool_calls[0]"),
])
def test_bad_tool_fields_are_400s_naming_the_field(tool_server: LocalServer,
                                                  body: dict[str, Any], param: str) -> None:
    status, reply, _ = post(tool_server, "/v1/chat/completions",
                            {"model": MODEL, "messages": ASK, **body})
    assert status == 400, reply
    assert reply["error"]["param"] == param


def test_a_template_without_a_known_format_refuses_tools_clearly(server: LocalServer) -> None:
    """The plain tiny models' template has no tool-call format: a 400 that says so."""
    body = {"model": MODEL, "messages": ASK, "tools": TOOLS}
    status, reply, _ = post(server, "/v1/chat/completions", body)
    assert status == 400 and reply["error"]["param"] == "tools"
    assert "Hermes / Qwen" in reply["error"]["message"]
    status, reply, _ = post(server, "/v1/chat/completions",
                            {**body, "tool_choice": "none", "max_tokens": 4})
    assert status == 200  # no tools asked for: served as usual


def test_a_host_without_a_published_template_binds_tools_on_the_engine_thread(
        qwen_pair: dict[str, Path]) -> None:
    """The app's host publishes no template: the job renders and binds the tools itself."""
    from dataclasses import replace

    from openai import OpenAI

    from specula.core.engine.config import Mode, SpecConfig
    from specula.core.engine.engine import Engine, EngineOptions
    from specula.server import EngineThread, ServedModel

    engine = Engine(EngineOptions(n_ctx=2048, n_threads=2))
    engine.load_target(qwen_pair["target"])
    served = replace(ServedModel.from_engine(engine, qwen_pair["target"]), template=None)
    host = EngineThread(engine, served)
    srv = LocalServer(host, port=0, spec=SpecConfig(mode=Mode.PLAIN))
    srv.start()
    try:
        client = OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        resp = _chat(client, tool_choice={"type": "function", "function": {"name": "get_weather"}})
        assert resp.choices[0].finish_reason == "tool_calls"
        _check_call(resp.choices[0].message.tool_calls[0], "get_weather")
        chunks = list(_chat(client, tool_choice="required", stream=True))
        assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    finally:
        srv.stop()
        host.close()
