"""Bad requests get OpenAI-style error objects with 4xx codes, and the server keeps serving."""

from __future__ import annotations

from typing import Any

import pytest

from specula.server import LocalServer
from tests.server.conftest import N_CTX, post, raw

CHAT = "/v1/chat/completions"
OK = {"model": "tiny-target", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def _error(status: int, body: dict[str, Any], want_status: int, param: str | None,
           code: str | None = None) -> dict[str, Any]:
    assert status == want_status, body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    assert err["param"] == param
    if code is not None:
        assert err["code"] == code
    return err


def test_malformed_json(server: LocalServer) -> None:
    status, body, _ = raw(server, "POST", CHAT, b'{"model": "tiny-target", "messages": [')
    _error(status, body, 400, None, "invalid_json")
    status, body, _ = raw(server, "POST", CHAT, b"\xff\xfe not utf-8")
    _error(status, body, 400, None, "invalid_json")
    status, body, _ = raw(server, "POST", CHAT, b"[1, 2]")
    _error(status, body, 400, None, "invalid_json")


@pytest.mark.parametrize(("change", "param", "code"), [
    ({"messages": None}, "messages", "missing_required_parameter"),
    ({"messages": []}, "messages", "invalid_type"),
    ({"messages": "hello"}, "messages", "invalid_type"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role", "invalid_value"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content", "invalid_type"),
    ({"model": None}, "model", "missing_required_parameter"),
    ({"model": 3}, "model", "invalid_type"),
    ({"temperature": "hot"}, "temperature", "invalid_type"),
    ({"temperature": 9}, "temperature", "invalid_value"),
    ({"max_tokens": "10"}, "max_tokens", "invalid_type"),
    ({"max_tokens": 0}, "max_tokens", "invalid_value"),
    ({"max_tokens": 2.5}, "max_tokens", "invalid_type"),
    ({"top_p": True}, "top_p", "invalid_type"),
    ({"seed": "x"}, "seed", "invalid_type"),
    ({"stop": [1, 2]}, "stop", "invalid_type"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
    ({"stream": "yes"}, "stream", "invalid_type"),
    ({"n": 2}, "n", "unsupported_value"),
    ({"specula": {"mode": "warp"}}, "specula.mode", "invalid_value"),
    ({"specula": {"draft_max": "4"}}, "specula.draft_max", "invalid_type"),
    ({"specula": {"turbo": 1}}, "specula", "invalid_value"),
])
def test_wrong_or_missing_fields(server: LocalServer, change: dict[str, Any], param: str,
                                 code: str) -> None:
    body = {k: v for k, v in {**OK, **change}.items() if v is not None}
    _error(*post(server, CHAT, body)[:2], 400, param, code)


def test_completion_prompt_types(server: LocalServer) -> None:
    base = {"model": "tiny-target", "max_tokens": 2}
    _error(*post(server, "/v1/completions", base)[:2], 400, "prompt", "missing_required_parameter")
    _error(*post(server, "/v1/completions", {**base, "prompt": {"a": 1}})[:2], 400, "prompt",
           "invalid_type")
    _error(*post(server, "/v1/completions", {**base, "prompt": [1, 10**9]})[:2], 400, "prompt")
    status, body, _ = post(server, "/v1/completions", {**base, "prompt": [1, 40, 41]})
    assert status == 200 and body["usage"]["prompt_tokens"] == 3


def test_unknown_model_is_404(server: LocalServer, client: Any) -> None:
    import openai

    _error(*post(server, CHAT, {**OK, "model": "gpt-4o"})[:2], 404, "model", "model_not_found")
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=OK["messages"])
    status, body, _ = raw(server, "GET", "/v1/models/gpt-4o")
    _error(status, body, 404, "model", "model_not_found")


def test_too_long_prompt_is_refused_before_generating(server: LocalServer, client: Any) -> None:
    import openai

    long = "hello world " * N_CTX
    err = _error(*post(server, CHAT, {**OK, "messages": [{"role": "user", "content": long}]})[:2],
                 400, "messages", "context_length_exceeded")
    assert str(N_CTX) in err["message"]
    with pytest.raises(openai.BadRequestError) as info:  # streaming too: refused before any header
        list(client.completions.create(model="tiny-target", prompt=long, stream=True))
    assert info.value.code == "context_length_exceeded"


def test_unknown_path_and_method(server: LocalServer) -> None:
    _error(*raw(server, "GET", "/v1/engines")[:2], 404, None, "unknown_url")
    _error(*raw(server, "DELETE", "/v1/models")[:2], 405, None, "method_not_allowed")


def test_still_serving_after_bad_requests(server: LocalServer) -> None:
    status, body, _ = post(server, CHAT, OK)
    assert status == 200 and body["choices"][0]["message"]["content"]
