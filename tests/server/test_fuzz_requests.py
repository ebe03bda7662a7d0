"""Property-based fuzzing of the request parser: no body or header set gives a 500 or silence.

Hypothesis builds bodies (mutations of a valid request, arbitrary JSON, bracket
soup, raw bytes) and head variations (Content-Length right, wrong or not a
number; random extra headers; methods and paths), sends them as raw bytes and
reads one full response. Deterministic (derandomized), no example database.
A small budget runs by default, a large one under ``-m slow``.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specula.core.engine.sampling.rules import SamplingParams
from specula.server import LocalServer
from specula.server.limits import nesting_depth
from tests.server.test_hostile_bodies import json_depth
from tests.server.wire import read_reply

OK: dict[str, Any] = {"model": "tiny-target", "max_tokens": 3,
                      "messages": [{"role": "user", "content": "hi"}]}
FIELDS = ["model", "messages", "prompt", "max_tokens", "max_completion_tokens", "temperature",
          "top_p", "top_k", "min_p", "repeat_penalty", "seed", "stop", "stream",
          "stream_options", "n", "logprobs", "frequency_penalty", "specula", "echo", "suffix"]
PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/tiny-target",
         "/health", "/v1/chat/completions?x=1", "/%00", "/v1/../etc", "/" + "a" * 3000]

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20))
values = st.recursive(scalars, lambda c: st.lists(c, max_size=4)
                      | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12)
messages = st.lists(st.fixed_dictionaries(
    {}, optional={"role": st.sampled_from(["user", "system", "assistant", "tool", "x"]) | values,
                  "content": st.text(max_size=40) | values}), max_size=3)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    body: dict[str, Any] = dict(OK)
    if draw(st.booleans()):
        body["prompt"] = draw(st.text(max_size=30) | st.lists(st.integers(-5, 600), max_size=5))
    for name in draw(st.lists(st.sampled_from(FIELDS) | st.text(max_size=6), max_size=4)):
        body[name] = draw(messages if name == "messages" else values)
    for name in ("max_tokens", "max_completion_tokens"):  # keep generations short
        v = body.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v > 8:
            body[name] = 4
    text = json.dumps(body, allow_nan=True)
    if draw(st.booleans()):  # JSON escapes the encoder never writes: lone surrogates
        text = text.replace("hi", draw(st.sampled_from(["\\ud800", "\\udfff\\ud800", "\\u0000"])))
    return text.encode()


bodies = (mutated()
          | values.map(lambda v: json.dumps(v, allow_nan=True).encode())
          | st.text(alphabet='[]{}",:\\0123 aeu', max_size=400).map(str.encode)
          | st.binary(max_size=200))
header_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABC0123456789", min_size=1, max_size=12)
header_values = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF,
                                               blacklist_characters="\x7f"), max_size=30)


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    body = draw(bodies)
    method = draw(st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "BREW"]))
    path = draw(st.sampled_from(PATHS))
    length = draw(st.sampled_from(["right", "right", "short", "long", "unicode", "junk", "none"]))
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lengths = {"right": str(len(body)), "short": str(max(0, len(body) - 3)),
               "long": str(len(body) + 5), "unicode": "\u00b2", "junk": "12, 13"}
    if length in lengths:
        head.append(f"Content-Length: {lengths[length]}")
    if length == "long":
        head.append("X-Half-Close: 1")
    for k, v in draw(st.lists(st.tuples(header_names, header_values), max_size=3)):
        if k.lower() not in ("content-length", "host", "transfer-encoding", "expect"):
            head.append(f"{k}: {v}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


@pytest.fixture(scope="module")
def fuzz_server(server: LocalServer) -> Any:
    srv = LocalServer(server.host, port=0, sampling=SamplingParams(max_tokens=4))
    srv.start()
    yield srv
    srv.stop()


def _answered(srv: LocalServer, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as sock:
        sock.sendall(data)
        if b"X-Half-Close" in data:  # a body shorter than announced ends here, not at a deadline
            sock.shutdown(socket.SHUT_WR)
        reply = read_reply(sock)  # raises on a reset or a close without a response
    assert reply.status < 500, (data[:300], reply.body[:300])
    if reply.headers.get("content-type") == "application/json":
        body = json.loads(reply.body)
        if reply.status >= 400:
            assert set(body["error"]) == {"message", "type", "param", "code"}


def _fuzz(srv: LocalServer, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(requests())
    def run(data: bytes) -> None:
        _answered(srv, data)

    run()


def test_fuzz_requests(fuzz_server: LocalServer) -> None:
    _fuzz(fuzz_server, 150)


@pytest.mark.slow
@pytest.mark.usefixtures("asked_for_slow")
def test_fuzz_requests_large(fuzz_server: LocalServer) -> None:
    _fuzz(fuzz_server, 4000)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(values)
def test_nesting_depth_matches_the_parsed_depth(value: Any) -> None:
    raw = json.dumps(value, allow_nan=True).encode()
    assert nesting_depth(raw, limit=10**6) == json_depth(value)
