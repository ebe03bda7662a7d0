"""Every bad value is a 400 that names it, never a 500 or a crash (issue 24): a penalty
of 0, a grammar token reference outside the vocabulary, logit_bias, and the hostile
structured requests that took the engine down; the next request is served each time."""

from __future__ import annotations

from typing import Any

import pytest

from specula.server import LocalServer
from tests.server.conftest import post

CHAT = "/v1/chat/completions"


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny-target", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
            "temperature": 0, **extra}


def _rf(schema: Any) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": "s", "schema": schema}}}


CASES = [
    ({"repeat_penalty": 0, "temperature": 0.7}, "repeat_penalty", "above 0"),
    ({"logit_bias": {"5": -100}}, "logit_bias", "not supported"),
    ({"logit_bias": [1]}, "logit_bias", "object"),
    ({"specula": {"grammar": "root ::= <[99999999]>"}}, "specula.grammar", "outside the vocabulary"),
    ({"specula": {"grammar": "root ::= <[4000000000000]>"}}, "specula.grammar", "outside"),
    ({"specula": {"grammar": "root ::= " + "(" * 100_000 + '"a"' + ")" * 100_000}},
     "specula.grammar", "nests"),
    ({"specula": {"grammar": 'root ::= "a"{1000}{1000}'}}, "specula.grammar", "expands"),
    (_rf({"type": "string", "maxLength": 30000}), "response_format.json_schema.schema",
     "'maxLength'"),
    (_rf({"type": "array", "items": {"type": "integer"}, "maxItems": 100000}),
     "response_format.json_schema.schema", "'maxItems'"),
    (_rf({"type": "string", "minLength": 1000000000}), "response_format.json_schema.schema",
     "'minLength'"),
    (_rf({"type": "string", "pattern": "^a{100000000}$"}), "response_format.json_schema.schema",
     "'pattern'"),
    (_rf({"enum": [f"v{i:06d}" for i in range(100_000)]}), "response_format.json_schema.schema",
     "'enum'"),
]
TOOL = {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": "string", "maxLength": 30000}}}}}],
    "tool_choice": "required"}


@pytest.mark.parametrize(("extra", "param", "says"), CASES)
def test_a_bad_value_is_a_400_naming_it_and_the_next_request_is_served(
        server: LocalServer, extra: dict[str, Any], param: str, says: str) -> None:
    status, data, _ = post(server, CHAT, _chat(**extra))
    assert status == 400, data
    assert data["error"]["param"] == param
    assert says in data["error"]["message"]
    status, data, _ = post(server, CHAT, _chat())
    assert status == 200, data


def test_a_forced_call_past_a_limit_names_the_tool(tool_server: LocalServer) -> None:
    status, data, _ = post(tool_server, CHAT, _chat(**TOOL))
    assert status == 400, data
    assert data["error"]["param"] == "tools[0].function.parameters"
    assert "'maxLength'" in data["error"]["message"]
    assert post(tool_server, CHAT, _chat())[0] == 200


def test_a_penalty_inside_the_range_still_works(server: LocalServer) -> None:
    status, data, _ = post(server, CHAT, _chat(repeat_penalty=0.5, temperature=0.7, seed=1))
    assert status == 200, data


def test_a_grammar_past_its_time_budget_ends_as_a_400_and_the_next_is_served(
        server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ambiguous grammar can keep thousands of parse states (each checked per token);
    the reply's llama.cpp time is capped. A zero budget makes any grammar go past it, so
    the path is checked without depending on this machine's speed."""
    from specula.core.engine.grammar.state import GrammarState

    monkeypatch.setattr(GrammarState, "TIME_BUDGET_S", 0.0)
    monkeypatch.setattr(GrammarState, "TIME_PER_TOKEN_S", 0.0)
    monkeypatch.setattr(GrammarState, "TIME_PER_CHECK_S", 0.0)
    status, data, _ = post(server, CHAT, _chat(specula={"grammar": 'root ::= [a-z]{0,20}'}))
    assert status == 400, data
    assert data["error"]["param"] == "specula.grammar"
    assert data["error"]["code"] == "grammar_too_costly"
    monkeypatch.undo()
    assert post(server, CHAT, _chat(specula={"grammar": 'root ::= [a-z]{0,20}'}))[0] == 200
