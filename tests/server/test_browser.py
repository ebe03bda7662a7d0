"""A web page cannot use the local server: Host allow-list, Origin check with a CORS
allow-list and proper preflight, and no Transfer-Encoding (server/browser.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.server import EngineThread, LocalServer, ServedModel
from specula.server.browser import BrowserPolicy, host_name
from tests.server.conftest import raw
from tests.server.wire import exchange, read_reply, request_bytes

ALLOWED = "http://app.example:8080"
CHAT = b'{"model": "tiny-target", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}'


@pytest.fixture(scope="module")
def web(tiny: dict[str, Path]) -> Iterator[LocalServer]:
    engine = Engine(EngineOptions(n_ctx=512, n_threads=1))
    engine.load_target(tiny["target"])
    host = EngineThread(engine, ServedModel.from_engine(engine, tiny["target"], None))
    srv = LocalServer(host, port=0, spec=SpecConfig(mode=Mode.PLAIN),
                      allowed_hosts=["box.lan"], cors_origins=[ALLOWED])
    srv.start()
    yield srv
    srv.stop()
    host.close()


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:1234", "127.0.0.1.nip.io",
                                  "10.1.2.3", "localhost.evil"])
def test_a_foreign_host_name_is_refused(web: LocalServer, host: str) -> None:
    """DNS rebinding sends the attacker's name: no answer, not even /v1/models."""
    for method, body in (("GET", None), ("POST", CHAT)):
        path = "/v1/models" if method == "GET" else "/v1/chat/completions"
        n = len(web.finished)
        status, data, _ = raw(web, method, path, body, headers={"Host": host})
        assert status == 421, data
        assert data["error"]["code"] == "host_not_allowed"
        assert "gguf" not in str(data) and len(web.finished) == n


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1", "127.0.0.1:9", "[::1]:9", "box.lan",
                                  "127.0.0.2"])
def test_local_names_and_the_allow_list_are_served(web: LocalServer, host: str) -> None:
    status, data, _ = raw(web, "GET", "/v1/models", headers={"Host": host})
    assert status == 200 and data["data"]


def test_a_cross_site_simple_post_is_refused_before_it_generates(web: LocalServer) -> None:
    """text/plain needs no preflight: the Origin header is what gives it away."""
    n = len(web.finished)
    status, data, headers = raw(web, "POST", "/v1/chat/completions", CHAT, headers={
        "Origin": "http://evil.example", "Content-Type": "text/plain"})
    assert status == 403 and data["error"]["code"] == "origin_not_allowed"
    assert "Access-Control-Allow-Origin" not in headers
    assert len(web.finished) == n
    status, _, _ = raw(web, "GET", "/v1/models", headers={"Origin": "null"})
    assert status == 403


def test_an_allowed_origin_gets_cors_headers_and_a_preflight(web: LocalServer) -> None:
    status, _, headers = raw(web, "OPTIONS", "/v1/chat/completions", headers={
        "Origin": ALLOWED, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, authorization"})
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert "Content-Type" in headers["Access-Control-Allow-Headers"]
    assert "Authorization" in headers["Access-Control-Allow-Headers"]
    status, data, headers = raw(web, "POST", "/v1/chat/completions", CHAT,
                                headers={"Origin": ALLOWED})
    assert status == 200, data
    assert headers["Access-Control-Allow-Origin"] == ALLOWED and headers["Vary"] == "Origin"
    status, _, headers = raw(web, "OPTIONS", "/v1/chat/completions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert status == 403 and "Access-Control-Allow-Origin" not in headers


def test_content_length_with_transfer_encoding_is_refused_and_nothing_is_smuggled(
        web: LocalServer) -> None:
    chunked = f"{len(CHAT):x}\r\n".encode() + CHAT + b"\r\n0\r\n\r\n"
    smuggled = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    data = request_bytes("/v1/chat/completions", chunked + smuggled,
                         {"Content-Length": str(len(chunked)), "Transfer-Encoding": "chunked"})
    with socket.create_connection(("127.0.0.1", web.port), timeout=30) as sock:
        sock.sendall(data)
        reply = read_reply(sock)
        assert reply.status == 400 and b"Transfer-Encoding" in reply.body
        assert reply.headers.get("connection") == "close"
        assert sock.recv(65536) == b""  # closed: the trailing request is never read


def test_two_content_lengths_are_refused(web: LocalServer) -> None:
    data = request_bytes("/v1/chat/completions", CHAT, {"Content-Length": str(len(CHAT))})
    data = data.replace(b"\r\n\r\n", f"\r\nContent-Length: {len(CHAT)}\r\n\r\n".encode(), 1)
    assert exchange(web.port, data).status == 400


def test_host_names_are_read_without_their_port() -> None:
    assert host_name("LocalHost:1234") == "localhost"
    assert host_name("[::1]:80") == "[::1]"
    assert host_name("::1") == "::1"
    policy = BrowserPolicy("0.0.0.0", (), ())
    assert policy.host_allowed("192.168.1.5:1234")  # bound everywhere: any address
    assert not policy.host_allowed("evil.example")
    assert not BrowserPolicy("127.0.0.1").host_allowed("192.168.1.5")
    assert BrowserPolicy("127.0.0.1", ("*",)).host_allowed("anything")
    assert BrowserPolicy(cors_origins=("*",)).origin_allowed("http://x")
