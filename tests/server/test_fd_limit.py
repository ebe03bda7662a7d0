"""`specula serve` under `ulimit -n 128`: 140 idle sockets do not keep a real request out.

The real command in a child process with the file limit lowered, so the
connection cap is the one it derives from that limit.
"""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from tests.server.wire import post

LIMIT = 128


def _lower_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def test_idle_sockets_cannot_exhaust_descriptors(tiny: dict[str, Path]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "specula.cli", "serve", "--model", str(tiny["target"]),
         "--port", "0", "--ctx", "512", "--threads", "1", "--mode", "plain",
         # Idle connections are reaped only after 10 minutes here, so a reply within the
         # client's 60 s proves the server made room by closing idle ones (no clock race).
         "--head-timeout", "600"],
        stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_lower_limit)
    idle: list[socket.socket] = []
    try:
        assert proc.stderr is not None
        port = 0
        for line in proc.stderr:
            m = re.search(r"on http://127\.0\.0\.1:(\d+)/v1", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "the server did not start"
        for _ in range(140):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=20))
        reply = post(port, "/v1/chat/completions", {
            "model": "tiny-target", "max_tokens": 3,
            "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status == 200, reply.body[:200]
        child = psutil.Process(proc.pid)
        assert child.num_fds() < LIMIT
        assert proc.poll() is None
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        proc.wait(20)
