"""The desktop app's side of the local server: the app's own engine serves HTTP clients.

:class:`GuiServerHost` implements :class:`specula.server.EngineHost`: jobs from
HTTP threads go to the engine worker through a queued signal, so they run on
the engine thread, one at a time, queued with the app's own replies; what is
loaded is cached on the GUI thread for ``served()``.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from specula.gui.engine_client import EngineClient
from specula.server import DEFAULT_PORT, LocalServer, ServedModel
from specula.server.queue import Job

log = logging.getLogger("specula.gui.server")


class GuiServerHost:
    """Thread-safe: ``submit`` and ``served`` are called from HTTP threads."""

    def __init__(self, client: EngineClient, n_ctx: int) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._served: ServedModel | None = None
        self._n_ctx = n_ctx
        self._paths: dict[str, str] = {}
        client.load_started.connect(self._on_load_started)
        client.target_loaded.connect(self._refresh)
        client.draft_loaded.connect(self._refresh)
        client.draft_unloaded.connect(self._refresh)
        self._refresh()

    def _on_load_started(self, kind: str, path: str) -> None:
        self._paths[kind] = path

    def _refresh(self, *_args: object) -> None:
        c = self._client
        served = None
        if c.target_info is not None:
            target = self._paths.get("target", c.target_info.source)
            draft = Path(self._paths.get("draft", c.draft_info.source)).stem if c.draft_info else None
            served = ServedModel(Path(target).stem, target, draft, self._n_ctx, c.backend or "CPU")
        with self._lock:
            self._served = served

    def submit(self, job: Job) -> None:
        self._client.submit_job(job)

    def served(self) -> ServedModel | None:
        with self._lock:
            return self._served


class ServerSwitch(QObject):
    """Starts and stops the local server for the app (the Settings page's switch)."""

    state_changed = Signal(bool, str)
    """Running or not, and a sentence for the user (the URL, or why it stopped/failed)."""

    def __init__(self, client: EngineClient, n_ctx: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = GuiServerHost(client, n_ctx)
        self.server: LocalServer | None = None

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.running

    def start(self, port: int = DEFAULT_PORT) -> None:
        if self.running:
            return
        try:
            server = LocalServer(self.host, port=port)
            server.start()
        except OSError as exc:
            self.server = None
            self.state_changed.emit(False, f"Could not listen on port {port}: {exc.strerror or exc}")
            return
        self.server = server
        self.state_changed.emit(True, f"Serving the loaded models at {server.url}/v1")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.state_changed.emit(False, "Local server off.")
