"""Raw HTTP/1.1 over a socket: what http.client would refuse to send, and a strict reader.

A test that must tell a reset from an answer cannot use a client library that
retries or hides it, so these helpers speak bytes and let every OSError through.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request_bytes(path: str, body: bytes, headers: dict[str, str] | None = None,
                  method: str = "POST") -> bytes:
    head = {"Host": "127.0.0.1", "Content-Type": "application/json",
            "Content-Length": str(len(body)), **(headers or {})}
    lines = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in head.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def read_reply(sock: socket.socket) -> Reply:
    """One response: the head, then Content-Length bytes or everything up to the close."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response head ({buf[:80]!r})")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-body")
            rest += chunk
        return Reply(status, headers, rest[:n])
    while chunk := sock.recv(65536):  # a stream: until the server closes
        rest += chunk
    return Reply(status, headers, rest)


def exchange(port: int, data: bytes, timeout: float = 60) -> Reply:
    """Send ``data`` on a new connection and read one reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_reply(sock)


def post(port: int, path: str, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    return exchange(port, request_bytes(path, json.dumps(obj).encode(), headers))


def sse_text(body: bytes) -> str:
    """The concatenated content of a chat or text stream (its ``data:`` events)."""
    text = []
    for line in body.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            event = json.loads(line[6:])
            for c in event.get("choices", []):
                text.append(c.get("delta", {}).get("content") or c.get("text") or "")
    return "".join(text)
