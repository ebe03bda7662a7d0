"""What the server's request log holds: how a generation ended (:class:`Finished`) and
every request as it was answered (:class:`Answered`), refusals included. Its own module
so that the HTTP handler (app.py) and the server that owns it (local.py) both name them
without importing each other."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from specula.core.engine.events import StopReason


@dataclass(frozen=True)
class Finished:
    """How one request ended (kept for the log, the GUI and the tests)."""

    request_id: str
    stop_reason: StopReason | None  # None: the engine failed
    tokens: int
    tokens_per_s: float = 0.0
    drafted: int = 0
    accepted: int = 0
    mode: str = ""
    at: float = field(default_factory=time.time)  # when it ended (seconds since the epoch)


@dataclass(frozen=True)
class Answered:
    """One request as it was answered, whatever its status (the app's request log): a
    refusal (400, model_not_found) is listed as much as a reply."""

    method: str
    path: str
    status: int
    message: str = ""  # the error's message when the status is not 2xx
    finished: Finished | None = None  # a generation's figures
    at: float = field(default_factory=time.time)
