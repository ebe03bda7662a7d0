"""Stop strings never cut a structured reply: a reply that a grammar constrains (a JSON
schema, a forced tool call) is the structure from its first token, so a stop string
could only cut inside it. The reply ends where the grammar does, whole and streamed,
and validates (checked with the independent ``jsonschema``); the same request without
``stop`` gives the same reply.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

MODEL = "tiny-target"
ASK = [{"role": "user", "content": "Give a and b as JSON."}]
SCHEMA = {"type": "object",
          "properties": {"a": {"type": "string", "maxLength": 8}, "b": {"type": "integer"}},
          "required": ["a", "b"], "additionalProperties": False}
RF = {"type": "json_schema", "json_schema": {"name": "ab", "schema": SCHEMA, "strict": True}}
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}}]
FORCED = {"type": "function", "function": {"name": "get_weather"}}
STOPS = ['"', ":", ",", "}", "{", '"a']


def _create(client: Any, stream: bool, **kw: Any) -> tuple[str, str | None, list[tuple[str, str]]]:
    """(content, finish_reason, [(name, arguments)]) of one reply, rebuilt from the stream."""
    args: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 200, "temperature": 0}
    args.update(kw)
    if not stream:
        choice = client.chat.completions.create(**args).choices[0]
        calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
        return choice.message.content or "", choice.finish_reason, calls
    content, finish, calls = "", None, {}
    for chunk in client.chat.completions.create(**args, stream=True):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        content += c.delta.content or ""
        for d in c.delta.tool_calls or []:
            name, so_far = calls.get(d.index, ("", ""))
            calls[d.index] = (d.function.name or name, so_far + (d.function.arguments or ""))
        finish = c.finish_reason or finish
    return content, finish, [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("stop", STOPS)
def test_stop_strings_do_not_cut_a_json_schema_reply(tool_client: Any, stop: str, stream: bool) -> None:
    content, finish, _ = _create(tool_client, stream, response_format=RF, stop=[stop])
    assert finish == "stop"
    jsonschema.validate(json.loads(content), SCHEMA)
    assert stop in content  # the stop string was there to cut, and did not
    assert content == _create(tool_client, False, response_format=RF)[0]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("stop", [["city"], ['"'], ["<tool_call>"], ["get_weather", "}"]])
def test_stop_strings_do_not_cut_a_forced_tool_call(tool_client: Any, stop: list[str],
                                                    stream: bool) -> None:
    content, finish, calls = _create(tool_client, stream, tools=TOOLS, tool_choice=FORCED, stop=stop)
    assert finish == "tool_calls"
    assert [name for name, _ in calls] == ["get_weather"]
    jsonschema.validate(json.loads(calls[0][1]), CITY)
    assert not content


def test_stop_strings_still_end_a_free_reply(tool_client: Any) -> None:
    """The control: without a grammar the same stop string ends the reply where it starts."""
    free, _, _ = _create(tool_client, False, max_tokens=40)
    stop = free[5:7]
    assert stop and stop in free
    content, finish, _ = _create(tool_client, False, max_tokens=40, stop=[stop])
    assert finish == "stop" and content == free[: free.index(stop)]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_stop_strings_do_not_cut_a_completion_under_a_gbnf(tool_client: Any, stream: bool) -> None:
    import re

    grammar = 'root ::= "ab" [c-e] [c-e]? [c-e]? "."'
    kw: dict[str, Any] = {"model": MODEL, "prompt": "the code", "max_tokens": 20, "temperature": 0,
                          "stop": ["b", "."], "extra_body": {"specula": {"grammar": grammar}}}
    if stream:
        chunks = [c for c in tool_client.completions.create(**kw, stream=True) if c.choices]
        text = "".join(c.choices[0].text for c in chunks)
        finish = next(c.choices[0].finish_reason for c in reversed(chunks)
                      if c.choices[0].finish_reason)
    else:
        choice = tool_client.completions.create(**kw).choices[0]
        text, finish = choice.text, choice.finish_reason
    assert finish == "stop" and re.fullmatch(r"ab[c-e]{1,3}\.", text), text
