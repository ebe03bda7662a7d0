"""Bodies built to break a parser get a 4xx that names the problem, on a connection that answers.

Sent as raw bytes over a socket (http.client would refuse some of them), each
case reads a full response: a dropped connection fails the test.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from specula.server import LocalServer
from specula.server.limits import MAX_BODY, MAX_DEPTH, nesting_depth
from tests.server.wire import exchange, post, request_bytes

CHAT = "/v1/chat/completions"
OK: dict[str, Any] = {"model": "tiny-target", "max_tokens": 3,
                      "messages": [{"role": "user", "content": "hi"}]}


def _err(reply: Any, status: int, code: str | None = None, param: str | None = None) -> str:
    assert reply.status == status, reply.body[:300]
    err = reply.json()["error"]
    if code is not None:
        assert err["code"] == code, err
    if param is not None:
        assert err["param"] == param, err
    return str(err["message"])


@pytest.mark.parametrize("opener", ["[", "{\"a\":"])
def test_deep_nesting_is_a_400_not_a_recursion(server: LocalServer, opener: str) -> None:
    body = (opener * 100_000).encode()
    _err(exchange(server.port, request_bytes(CHAT, body)), 400, "invalid_json")
    deep = json.dumps({**OK, "extra": json.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))})
    assert "nests deeper" in _err(exchange(server.port, request_bytes(CHAT, deep.encode())), 400)
    assert post(server.port, CHAT, OK).status == 200


def test_brackets_inside_strings_are_text(server: LocalServer) -> None:
    code = "[" * 5000 + "{" * 5000 + '\\"[['
    reply = post(server.port, CHAT, {**OK, "messages": [{"role": "user", "content": code}]})
    assert reply.status in (200, 400), reply.body[:200]
    if reply.status == 400:  # long for the tiny context, but never a depth error
        assert reply.json()["error"]["code"] == "context_length_exceeded"


@pytest.mark.parametrize("value", ["\u00b2", "\u0661\u0662", "12abc", "-5", "1" * 40, ""])
def test_content_length_must_be_ascii_digits(server: LocalServer, value: str) -> None:
    head = f"POST {CHAT} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {value}\r\n\r\n"
    # Latin-1 where it can (one byte per character, as the server decodes it), else UTF-8.
    data = head.encode("latin-1") if value.isascii() or max(map(ord, value)) < 256 else head.encode()
    reply = exchange(server.port, data + b"{}")
    assert reply.status in (400, 413), reply.body
    assert reply.json()["error"]["code"] in ("invalid_content_length", "request_too_large")


def test_oversized_body_is_413_before_it_is_read(server: LocalServer) -> None:
    head = f"POST {CHAT} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head.encode())  # and not one byte of the body
        from tests.server.wire import read_reply

        _err(read_reply(sock), 413, "request_too_large")


@pytest.mark.parametrize(("seed", "ok"), [(-1, True), (0, True), (2**32, True), (2**63 - 1, True),
                                          (-2, False), (-(2**63), False), (2**63, False)])
def test_seed_range(server: LocalServer, seed: int, ok: bool) -> None:
    reply = post(server.port, CHAT, {**OK, "seed": seed, "temperature": 0.8})
    if ok:
        assert reply.status == 200, reply.body[:300]
    else:
        _err(reply, 400, "invalid_value", "seed")


def test_huge_integers_are_400(server: LocalServer) -> None:
    body = json.dumps(OK)[:-1] + ', "temperature": ' + "9" * 400 + "}"
    _err(exchange(server.port, request_bytes(CHAT, body.encode())), 400, "invalid_value",
         "temperature")
    body = json.dumps(OK)[:-1] + ', "seed": ' + "9" * 5000 + "}"  # past Python's 4300 digits
    _err(exchange(server.port, request_bytes(CHAT, body.encode())), 400, "invalid_json")


@pytest.mark.parametrize(("where", "param"), [
    ({"messages": [{"role": "user", "content": "\\ud800 lone"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a\\udfffb"}]}]},
     "messages[0].content[0].text"),
    ({"stop": ["\\ud83d"]}, "stop[0]"),
    ({"model": "tiny\\udc00"}, "model"),
])
def test_lone_surrogate_is_400(server: LocalServer, where: dict[str, Any], param: str) -> None:
    body = json.dumps({**OK, **where}).replace("\\\\u", "\\u")  # a JSON escape, not UTF-8
    assert "\\ud" in body
    _err(exchange(server.port, request_bytes(CHAT, body.encode())), 400, "invalid_value", param)
    # A proper pair is text.
    pair = json.dumps({**OK, "messages": [{"role": "user", "content": "\U0001F600"}]})
    assert post(server.port, CHAT, json.loads(pair)).status == 200


def json_depth(value: Any) -> int:
    """The nesting depth of a parsed value, the plain recursive way (independent of the scanner)."""
    if isinstance(value, dict):
        return 1 + max((json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((json_depth(v) for v in value), default=0)
    return 0


def test_nesting_depth_scanner() -> None:
    for text in ["{}", '{"a": [1, {"b": []}]}', '"[[[["', '["\\"[", [[]]]', '{"a": "\\\\"}',
                 "[" * 10 + "]" * 10, '{"a{": {"]": "}"}}']:
        assert nesting_depth(text.encode()) == json_depth(json.loads(text)), text
    assert nesting_depth(b"[" * 1000, limit=64) == 65  # stops counting past the limit
