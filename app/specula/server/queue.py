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
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from specula.core.chat.template import ChatTemplate
from specula.core.engine.engine import Engine
from specula.core.gguf.model_info import ModelInfo
from specula.core.library.labels import clean_name, label_for

log = logging.getLogger("specula.server")

Job = Callable[[Engine], None]


class QueueFull(Exception):
    """More requests are waiting than the host accepts (answered with a 429).

    ``retry_after_s`` is the host's guess of when a place frees up (the
    ``Retry-After`` header: OpenAI clients wait that long before retrying).
    """

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = max(1, retry_after_s)


@dataclass(frozen=True)
class ServedModel:
    """What /v1/models says about the loaded pair; requests must name ``id``."""

    id: str
    target_path: str
    draft_id: str | None
    n_ctx: int
    backend: str
    created: int = field(default_factory=lambda: int(time.time()))
    # The target's chat template, so that HTTP threads render prompts themselves (a
    # template is untrusted code: see server/render.py); None: rendered on the engine thread.
    template: ChatTemplate | None = field(default=None, compare=False, repr=False)
    # Other names a client may use: the model's display name, its name without quantization
    # words, the file's stem without its quantization (compared ignoring case and separators).
    aliases: tuple[str, ...] = field(default=(), compare=False)
    # The target's MTP (NextN) layers: without them a request for mode "mtp" is a 400.
    mtp_layers: int = field(default=0, compare=False)

    @classmethod
    def from_engine(cls, engine: Engine, target_path: str | Path,
                    draft_path: str | Path | None = None) -> ServedModel:
        model = engine.target_model
        info = engine.target_info
        return cls(Path(target_path).stem, str(target_path),
                   Path(draft_path).stem if draft_path else None, engine.n_ctx, engine.backend,
                   template=ChatTemplate.for_model(model) if model is not None else None,
                   aliases=aliases_for(target_path, info), mtp_layers=engine.mtp_layers)

    def matches(self, name: str) -> bool:
        """The id, the file name, the full path or an alias name the model (aliases and the
        id ignoring case, spaces, hyphens and underscores)."""
        p = Path(self.target_path)
        if name in (self.id, p.name, str(p)):
            return True
        wanted = _normal(name)
        return bool(wanted) and wanted in {_normal(a) for a in (self.id, *self.aliases)}


def _normal(name: str) -> str:
    return re.sub(r"[\s_-]+", "-", name.strip().lower())


def aliases_for(path: str | Path, info: ModelInfo | None) -> tuple[str, ...]:
    """The names a client may use for the model at ``path`` besides its file name."""
    out = []
    if info is not None:
        out += [info.display_name, label_for(path, info).name]
    out.append(clean_name(Path(path).stem))
    return tuple(dict.fromkeys(a for a in out if a))


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
        self._mean_job_s = 1.0  # a running mean of how long a job takes, for Retry-After
        self._thread = threading.Thread(target=self._loop, name="specula-engine", daemon=True)
        self._thread.start()

    def served(self) -> ServedModel | None:
        return self._served

    def submit(self, job: Job) -> None:
        waiting = self._jobs.qsize()
        if waiting >= self._max_waiting:
            raise QueueFull(f"{waiting} request{'s' if waiting != 1 else ''} already waiting",
                            retry_after_s=min(60, round(waiting * self._mean_job_s)))
        self._jobs.put(job)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            start = time.monotonic()
            try:
                job(self.engine)
            except Exception:  # a job reports its own errors; this only keeps the thread alive
                log.exception("server job failed")
            self._mean_job_s = 0.8 * self._mean_job_s + 0.2 * (time.monotonic() - start)

    def close(self, timeout: float = 10.0) -> None:
        """Stop after the running job and close the engine."""
        self._jobs.put(None)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.engine.close()
