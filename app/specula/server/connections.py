"""Every open client connection, its phase, and the deadline that phase allows.

Why: with a thread per connection and no deadlines, 300 half-sent requests
held 305 threads, and with the process's file limit at 128, 140 idle sockets
kept a real request out. Here each connection is in one phase:

- ``WAITING`` for a request head (a fresh connection, or keep-alive between
  requests): it must send its whole head before a deadline, and it is the
  first to be closed when the server runs out of room;
- ``BODY``: authenticated (the key is checked on the head, before any body is
  read) and sending its body, with a deadline of its own;
- ``BUSY``: a request the server is working on; never closed for time (a reply
  waits on the engine queue; a client that leaves is noticed separately).

A reaper thread shuts down connections past their deadline (the blocked read
then returns end-of-file and the handler thread ends normally). The number
of connections is capped from the process's file-descriptor limit; when the
cap is reached the oldest WAITING connection makes room, so idle sockets can
never keep out a client that has something to ask.
"""

from __future__ import annotations

import enum
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

log = logging.getLogger("specula.server")

HEAD_TIMEOUT_S = 10.0  # a new connection's first request head, whole
KEEPALIVE_TIMEOUT_S = 15.0  # idle between requests, then the next head (clients pool for 5 s)
BODY_TIMEOUT_S = 30.0  # the whole body (16 MB at 1 MB/s fits)
DEFAULT_MAX_CONNECTIONS = 128
FD_RESERVE = 24  # descriptors kept for model files, logs, the listening socket
REAP_EVERY_S = 0.25


class Phase(enum.Enum):
    WAITING = "waiting"
    BODY = "body"
    BUSY = "busy"


@dataclass
class Conn:
    sock: socket.socket
    phase: Phase
    deadline: float | None
    since: float
    doomed: bool = False  # shut down; its handler thread is on its way out


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 32  # not Linux: a guess on the safe side


def fd_limited_max(wanted: int = DEFAULT_MAX_CONNECTIONS) -> int:
    """``wanted``, or fewer when the process's open-file limit could not hold that many."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return wanted
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(4, min(wanted, soft - open_fds() - FD_RESERVE))


class Connections:
    """The open connections of one server (thread-safe)."""

    def __init__(self, max_connections: int, head_timeout_s: float = HEAD_TIMEOUT_S,
                 keepalive_timeout_s: float = KEEPALIVE_TIMEOUT_S,
                 body_timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.max = max_connections
        self.head_timeout_s = head_timeout_s
        self.keepalive_timeout_s = keepalive_timeout_s
        self.body_timeout_s = body_timeout_s
        self.closed_for_time = 0  # counters, for the log and the tests
        self.closed_for_room = 0
        self._conns: dict[int, Conn] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap_loop, name="specula-reaper", daemon=True)
        self._reaper.start()

    def __len__(self) -> int:
        with self._cond:
            return len(self._conns)

    def wait_for_room(self, timeout_s: float) -> bool:
        """True once a new connection fits (closing the oldest waiting one if it must).

        Connections being shut down still count until their threads have ended, so
        threads and descriptors never exceed the cap, also on a starved CPU.
        """
        end = time.monotonic() + timeout_s
        with self._cond:
            while len(self._conns) >= self.max:
                if not any(c.doomed for c in self._conns.values()):
                    self._evict_one()
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def _evict_one(self) -> bool:
        waiting = [c for c in self._conns.values() if c.phase is Phase.WAITING and not c.doomed]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.since)
        oldest.doomed = True
        self.closed_for_room += 1
        _shutdown(oldest.sock)
        return True

    def add(self, sock: socket.socket) -> None:
        now = time.monotonic()
        with self._cond:
            self._conns[id(sock)] = Conn(sock, Phase.WAITING, now + self.head_timeout_s, now)

    def remove(self, sock: socket.socket) -> None:
        with self._cond:
            self._conns.pop(id(sock), None)
            self._cond.notify_all()

    def set_phase(self, sock: socket.socket, phase: Phase, *, keepalive: bool = False) -> None:
        now = time.monotonic()
        timeout = {Phase.WAITING: self.keepalive_timeout_s if keepalive else self.head_timeout_s,
                   Phase.BODY: self.body_timeout_s, Phase.BUSY: None}[phase]
        with self._cond:
            c = self._conns.get(id(sock))
            if c is not None and not c.doomed:
                c.phase, c.since = phase, now
                c.deadline = None if timeout is None else now + timeout

    def _reap_loop(self) -> None:
        while not self._stop.wait(REAP_EVERY_S):
            now = time.monotonic()
            with self._cond:
                late = [c for c in self._conns.values()
                        if not c.doomed and c.deadline is not None and c.deadline <= now]
                for c in late:
                    c.doomed = True
                    self.closed_for_time += 1
                    _shutdown(c.sock)
            for c in late:
                log.info("closed a connection that stayed %s too long", c.phase.value)

    def close_all(self) -> None:
        """Stop the reaper and shut every connection down (the server is stopping)."""
        self._stop.set()
        with self._cond:
            for c in self._conns.values():
                _shutdown(c.sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
