"""Load and soak: 64 concurrent clients of every kind, then (slow) ten minutes of steady traffic.

Loopback only, bounded in count and time. Every request must be answered
with 200, or 429 with Retry-After; never a reset. Greedy replies must be the
bytes a quiet server gives for the same prompt, and once the clients are
gone the server's threads and file descriptors are back where they started.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from dataclasses import dataclass

import psutil
import pytest

from specula.server import LocalServer
from tests.server.wire import Reply, post, read_reply, request_bytes, sse_text

CHAT = "/v1/chat/completions"
PROMPTS = ["hello world", "the code", "a function that", "print the"]
MAX_TOKENS = 24
KINDS = ("whole", "stream", "leave", "slow")


def _body(prompt: str, stream: bool) -> dict[str, object]:
    return {"model": "tiny-target", "max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream,
            "messages": [{"role": "user", "content": prompt}]}


@dataclass
class Outcome:
    kind: str
    prompt: str
    status: int = 0
    text: bytes = b""
    retry_after: str | None = None
    error: BaseException | None = None


def _client(port: int, kind: str, prompt: str) -> Outcome:
    out = Outcome(kind, prompt)
    try:
        data = request_bytes(CHAT, json.dumps(_body(prompt, kind in ("stream", "leave"))).encode())
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            if kind == "slow":  # a slow sender: the body in eight pieces
                step = len(data) // 8 + 1
                for i in range(0, len(data), step):
                    sock.sendall(data[i:i + step])
                    time.sleep(0.05)
            else:
                sock.sendall(data)
            if kind == "leave":
                got = b""
                while got.count(b"data: ") < 3 and b"\r\n\r\n{" not in got:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    got += chunk
                out.status = int(got.split(b" ", 2)[1]) if got else 0
                if out.status == 429:
                    out.retry_after = "seen"
                return out  # and hang up mid-reply
            r: Reply = read_reply(sock)
        out.status, out.retry_after = r.status, r.headers.get("retry-after")
        if r.status == 200:
            text = sse_text(r.body) if kind == "stream" else r.json()["choices"][0]["message"]["content"]
            out.text = text.encode()
    except BaseException as exc:  # a reset or a timeout: recorded, and fails the test
        out.error = exc
    return out


def _quiet_replies(server: LocalServer) -> dict[str, bytes]:
    ref = {}
    for p in PROMPTS:
        r = post(server.port, CHAT, _body(p, False))
        assert r.status == 200
        ref[p] = r.json()["choices"][0]["message"]["content"].encode()
    return ref


def _wave(server: LocalServer, n: int, rng: random.Random) -> list[Outcome]:
    jobs = [(KINDS[i % len(KINDS)], rng.choice(PROMPTS)) for i in range(n)]
    results: list[Outcome] = []
    lock = threading.Lock()
    barrier = threading.Barrier(n)

    def run(kind: str, prompt: str) -> None:
        barrier.wait(30)
        o = _client(server.port, kind, prompt)
        with lock:
            results.append(o)

    threads = [threading.Thread(target=run, args=j) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == n, "a client never finished"
    return results


def _check(results: list[Outcome], ref: dict[str, bytes]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for o in results:
        assert o.error is None, f"{o.kind}: {o.error!r}"
        assert o.status in (200, 429), o
        counts[o.status] = counts.get(o.status, 0) + 1
        if o.status == 429:
            assert o.retry_after, o
        elif o.kind != "leave":
            assert o.text == ref[o.prompt], (o.kind, o.prompt)
    return counts


def _settled(server: LocalServer, proc: psutil.Process, threads: int, fds: int,
             timeout: float = 60) -> str:
    """"ok" once the clients' connections, threads and descriptors are gone; else what is left."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if server.connections == 0 and proc.num_threads() <= threads and proc.num_fds() <= fds:
            return "ok"
        time.sleep(0.05)
    return (f"connections {server.connections}, threads {proc.num_threads()} (was {threads}), "
            f"fds {proc.num_fds()} (was {fds})")


def test_64_concurrent_clients(server: LocalServer) -> None:
    ref = _quiet_replies(server)
    proc = psutil.Process()
    threads, fds = proc.num_threads(), proc.num_fds()
    counts = _check(_wave(server, 64, random.Random(15)), ref)
    assert counts.get(200, 0) >= 1
    assert _settled(server, proc, threads, fds) == "ok"
    assert _quiet_replies(server) == ref  # and the server is as it was


@pytest.mark.slow
@pytest.mark.usefixtures("asked_for_slow")
def test_ten_minutes_of_steady_traffic(server: LocalServer) -> None:
    ref = _quiet_replies(server)
    proc = psutil.Process()
    threads, fds = proc.num_threads(), proc.num_fds()
    rng = random.Random(1515)
    end = time.monotonic() + 600
    total: dict[int, int] = {}
    while time.monotonic() < end:
        for status, n in _check(_wave(server, rng.randint(4, 16), rng), ref).items():
            total[status] = total.get(status, 0) + n
    assert total.get(200, 0) > 100
    assert _settled(server, proc, threads, fds) == "ok"
