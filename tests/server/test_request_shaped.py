"""A failure caused by the request is a 4xx that names it, never a 500 (issue 46, items 2, 3).

The server here serves a tiny model whose template checks the turn order the
way Hugging Face templates do (``raise_exception('Conversation roles must
alternate ...')``), once rendering on the HTTP thread and once on the engine
thread (a host that does not publish its template). Each request is built by
the test; the next ordinary request is served after each refusal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from specula.core.engine.engine import Engine, EngineOptions
from specula.server import EngineThread, LocalServer, ServedModel
from specula.server.limits import MAX_BODY
from specula.server.render import MAX_CHARS_PER_TOKEN, check_request_size
from specula_tools.tiny_models import CHATML_TEMPLATE, TARGET, build_tiny_model
from tests.server.wire import post

N_CTX = 2048
CHAT = "/v1/chat/completions"
ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
TURN_ORDER_TEMPLATE = (
    "{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('" + ALTERNATE + "') }}{% endif %}{% endfor %}" + CHATML_TEMPLATE)


@pytest.fixture(scope="module")
def turn_order_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("turns") / "turns.gguf"
    return build_tiny_model(path, replace(TARGET, name="tiny-turns",
                                          chat_template=TURN_ORDER_TEMPLATE))


@pytest.fixture(scope="module", params=["http_thread", "engine_thread"])
def srv(request: pytest.FixtureRequest, turn_order_model: Path) -> Iterator[LocalServer]:
    engine = Engine(EngineOptions(n_ctx=N_CTX, n_threads=1))
    engine.load_target(turn_order_model)
    served = ServedModel.from_engine(engine, turn_order_model)
    if request.param == "engine_thread":
        served = replace(served, template=None)
    host = EngineThread(engine, served)
    server = LocalServer(host, port=0)
    server.start()
    yield server
    server.stop()
    host.close()


def _chat(server: LocalServer, messages: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    reply = post(server.port, CHAT, {"model": server.host.served().id,  # type: ignore[union-attr]
                                     "max_tokens": 2, "messages": messages})
    return reply.status, reply.json()


def _still_serves(server: LocalServer) -> None:
    status, body = _chat(server, [{"role": "user", "content": "hello"}])
    assert status == 200, body


def test_deeply_nested_tool_call_arguments_are_a_400_naming_the_field(srv: LocalServer) -> None:
    """1,000 ``[`` then 1,000 ``]``: valid JSON text inside a string, which json.loads
    parses by recursing once per level (a RecursionError, then a 500)."""
    args = "[" * 1000 + "]" * 1000
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "f", "arguments": args}}]},
                {"role": "user", "content": "again"}]
    status, body = _chat(srv, messages)
    assert status == 400, body
    assert body["error"]["param"] == "messages[1].tool_calls[0].function.arguments"
    assert "nests deeper than" in body["error"]["message"]
    _still_serves(srv)


def test_a_turn_order_the_template_refuses_is_a_400_quoting_it(srv: LocalServer) -> None:
    status, body = _chat(srv, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert status == 400, body
    err = body["error"]
    assert err["code"] == "template_refused" and err["param"] == "messages"
    assert ALTERNATE in err["message"]
    _still_serves(srv)


def test_more_messages_than_the_context_has_tokens_is_a_400(srv: LocalServer) -> None:
    """200,000 one-word messages (6.8 MB): rendering them ran past the template's budget
    and came back as a 500 blaming the model."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "word"}
                for i in range(200_000)]
    status, body = _chat(srv, messages)
    assert status == 400, body
    assert body["error"]["code"] == "context_length_exceeded"
    assert "200,000 messages" in body["error"]["message"]
    _still_serves(srv)


def test_one_message_larger_than_any_prompt_is_a_400(srv: LocalServer) -> None:
    """One 15 MB message: within the body limit, far beyond the context."""
    content = "x" * (15 * 1024 * 1024)
    assert len(json.dumps({"messages": [{"content": content}]})) < MAX_BODY
    status, body = _chat(srv, [{"role": "user", "content": content}])
    assert status == 400, body
    assert body["error"]["code"] == "context_length_exceeded"
    _still_serves(srv)


def test_the_request_bounds_are_decided_from_the_request_alone() -> None:
    """No template runs: the bounds follow from the message count and the text, at the
    same characters-per-token bound the rendered prompt is held to."""
    fits = [{"role": "user", "content": "x" * (N_CTX * MAX_CHARS_PER_TOKEN)}]
    check_request_size(fits, None, N_CTX)  # exactly at the bound: allowed
    for messages, tools in (
        ([{"role": "user", "content": "x" * (N_CTX * MAX_CHARS_PER_TOKEN + 1)}], None),
        ([{"role": "user", "content": ""}] * (N_CTX + 1), None),
        ([{"role": "user", "content": "hi"}],
         [{"type": "function", "function": {"name": "f", "description": "d" * N_CTX
                                            * MAX_CHARS_PER_TOKEN}}]),
        ([{"role": "assistant", "content": "", "tool_calls": [{"function": {
            "name": "f", "arguments": {"a": "x" * N_CTX * MAX_CHARS_PER_TOKEN}}}]}], None),
    ):
        with pytest.raises(Exception, match="context") as caught:
            check_request_size(messages, tools, N_CTX)
        assert getattr(caught.value, "status", None) == 400
