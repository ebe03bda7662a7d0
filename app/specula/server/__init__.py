"""OpenAI-compatible HTTP server over specula.core (no Qt).

Routes: ``GET /v1/models``, ``POST /v1/chat/completions`` and
``POST /v1/completions`` (streaming SSE or not). Speculative statistics come
back in a ``"specula"`` field and, for non-streaming replies, in the
``X-Specula-Stats`` header.

Embedding it (the hook the desktop app uses)::

    from specula.server import LocalServer, ServedModel

    class AppHost:                       # implements specula.server.EngineHost
        def submit(self, job):           # job: Callable[[Engine], None]
            worker.run_on_engine_thread(job)   # e.g. a queued signal to the engine QThread
        def served(self):                # ServedModel | None, cheap and thread-safe
            return current_pair

    server = LocalServer(AppHost(), port=1234)
    server.start()                       # background thread; server.url -> "http://127.0.0.1:1234"
    ...
    server.stop()

Rules for a host: ``submit`` must return at once and run jobs one at a time on
the thread that owns the Engine (a job runs a whole reply, checking its
cancel Event every step, so the GUI's own replies simply queue behind it);
``served`` is called from HTTP threads, so return a value cached on the
owner thread rather than reading the Engine. ``specula serve`` uses
:class:`EngineThread`, which owns an Engine on a thread of its own.
"""

from specula.server.local import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    BadApiKey,
    LocalServer,
    RemoteBindingRefused,
)
from specula.server.queue import EngineHost, EngineThread, Job, QueueFull, ServedModel

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "BadApiKey",
    "EngineHost",
    "EngineThread",
    "Job",
    "LocalServer",
    "QueueFull",
    "RemoteBindingRefused",
    "ServedModel",
]
