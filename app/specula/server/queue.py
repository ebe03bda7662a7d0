"""Who runs the engine for the server: one owner thread, one request at a time.

The :class:`Engine` is not thread-safe and a llama.cpp context holds one
conversation's KV cache, so every request becomes a *job* (a callable taking
the Engine) that runs to completion on the engine's owner thread before the
next one starts. HTTP threads only parse, wait and write.

:class:`EngineHost` is the seam between the server and whoever owns the
engine. ``specula serve`` uses :class:`EngineThread` (a thread of its own);
the desktop app passes a host whose ``submit`` hands the job to its engine
worker QThread, so the app and the server share one loaded model pair.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from specula.core.engine.engine import Engine

log = logging.getLogger("specula.server")

Job = Callable[[Engine], None]


class QueueFull(Exception):
    """More requests are waiting than the host accepts (answered with a 429)."""


@dataclass(frozen=True)
class ServedModel:
    """What /v1/models says about the loaded pair; requests must name ``id``."""

    id: str
    target_path: str
    draft_id: str | None
    n_ctx: int
    backend: str
    created: int = field(default_factory=lambda: int(time.time()))

    @classmethod
    def from_engine(cls, engine: Engine, target_path: str | Path,
                    draft_path: str | Path | None = None) -> ServedModel:
        return cls(Path(target_path).stem, str(target_path),
                   Path(draft_path).stem if draft_path else None, engine.n_ctx, engine.backend)

    def matches(self, name: str) -> bool:
        """The id, the file name or the full path all name the model."""
        p = Path(self.target_path)
        return name in (self.id, p.name, str(p))


class EngineHost(Protocol):
    """Runs jobs on the engine's owner thread, in order, one at a time."""

    def submit(self, job: Job) -> None:
        """Queue ``job``; return at once. Raise :class:`QueueFull` to refuse it."""

    def served(self) -> ServedModel | None:
        """The loaded pair, or None when no target is loaded (requests get a 503)."""


class EngineThread:
    """An :class:`EngineHost` that owns an Engine on a daemon thread of its own."""

    def __init__(self, engine: Engine, served: ServedModel, max_waiting: int = 32) -> None:
        self.engine = engine
        self._served = served
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._max_waiting = max_waiting
        self._thread = threading.Thread(target=self._loop, name="specula-engine", daemon=True)
        self._thread.start()

    def served(self) -> ServedModel | None:
        return self._served

    def submit(self, job: Job) -> None:
        if self._jobs.qsize() >= self._max_waiting:
            raise QueueFull(f"{self._max_waiting} requests are already waiting")
        self._jobs.put(job)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job(self.engine)
            except Exception:  # a job reports its own errors; this only keeps the thread alive
                log.exception("server job failed")

    def close(self, timeout: float = 10.0) -> None:
        """Stop after the running job and close the engine."""
        self._jobs.put(None)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.engine.close()
