"""A client that leaves mid-stream cancels its generation; the next request is served."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from specula.core.engine.events import StopReason
from specula.server import LocalServer

MAX_TOKENS = 1900  # greedy on the tiny pair runs ~1500+ tokens without an end of turn


def _start_stream(server: LocalServer) -> socket.socket:
    body = json.dumps({"model": "tiny-target", "stream": True, "max_tokens": MAX_TOKENS,
                       "temperature": 0, "messages": [{"role": "user", "content": "hello world"}]})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                  f"application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    return sock


def test_client_disconnect_cancels_generation(server: LocalServer, client: Any) -> None:
    before = len(server.finished)
    sock = _start_stream(server)
    got = b""
    while got.count(b"data: ") < 3:  # the role chunk and two tokens
        got += sock.recv(4096)
    assert got.startswith(b"HTTP/1.1 200")
    sock.close()
    deadline = time.monotonic() + 30
    while len(server.finished) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    last = server.finished[-1]
    assert last.stop_reason is StopReason.CANCELLED
    assert 0 < last.tokens < MAX_TOKENS
    r = client.chat.completions.create(model="tiny-target", max_tokens=5, temperature=0,
                                       messages=[{"role": "user", "content": "hi"}])
    assert r.usage.completion_tokens == 5
    assert server.finished[-1].stop_reason is StopReason.MAX_TOKENS


def test_disconnect_while_waiting_non_streaming(server: LocalServer, client: Any) -> None:
    """A non-streaming client that gives up is noticed by the socket peek, not only on write."""
    before = len(server.finished)
    body = json.dumps({"model": "tiny-target", "max_tokens": MAX_TOKENS, "temperature": 0,
                       "messages": [{"role": "user", "content": "hello world"}]})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}"
                  f"\r\n\r\n{body}").encode())
    time.sleep(0.3)
    sock.close()
    deadline = time.monotonic() + 30
    while len(server.finished) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.finished[-1].stop_reason is StopReason.CANCELLED
    assert server.finished[-1].tokens < MAX_TOKENS
