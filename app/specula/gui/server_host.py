"""The desktop app's side of the local server: the app's own engine serves HTTP clients.

:class:`GuiServerHost` implements :class:`specula.server.EngineHost`: jobs from
HTTP threads go to the engine worker through a queued signal, so they run on
the engine thread, one at a time, queued with the app's own replies; what is
loaded is cached on the GUI thread for ``served()``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot

from specula.core.engine.config import SpecConfig
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.settings import Settings
from specula.gui.engine_client import EngineClient
from specula.server import DEFAULT_PORT, LocalServer, ServedModel
from specula.server.queue import Job, aliases_for
from specula.server.request_log import Answered

LOG_SIZE = 50  # requests the chip's log keeps

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
            # The context the engine runs the target with (its own default, capped by
            # its training length), the length requests are refused at.
            served = ServedModel(Path(target).stem, target, draft, c.n_ctx or self._n_ctx,
                                 c.backend or "CPU", aliases=aliases_for(target, c.target_info),
                                 mtp_layers=c.mtp_layers)
        with self._lock:
            self._served = served

    def submit(self, job: Job) -> None:
        self._client.submit_job(job)

    def served(self) -> ServedModel | None:
        with self._lock:
            return self._served


class ServerSwitch(QObject):
    """Starts and stops the local server for the app (the Settings page's switch and the
    chat page's chip); remembers whether it ran (restored at the next start), keeps a
    log of every request it answered (refusals too), and answers them with the chat's settings."""

    state_changed = Signal(bool, str)
    """Running or not, and a sentence for the user (the URL, or why it stopped/failed)."""
    request_answered = Signal(object)
    """A request was answered, whatever its status (a server.app.Answered); queued to the
    GUI thread."""

    def __init__(self, client: EngineClient, n_ctx: int, parent: QObject | None = None,
                 settings: Settings | None = None) -> None:
        super().__init__(parent)
        self.host = GuiServerHost(client, n_ctx)
        self.server: LocalServer | None = None
        self.settings = settings
        self.log: deque[Answered] = deque(maxlen=LOG_SIZE)
        self.message = "Local server off."
        # What a request leaves out comes from the chat panel (set_defaults), not the
        # Settings page: requests behave like the chat the user is looking at.
        self.sampling: SamplingParams | None = None
        self.spec: SpecConfig | None = None
        # A slot of this object, so the append is queued to the GUI thread like the chip's
        # update: a bare callable would run on the HTTP thread, before the chip had heard.
        self.request_answered.connect(self._logged)

    @Slot(object)
    def _logged(self, answered: Answered) -> None:
        self.log.append(answered)

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.running

    def set_defaults(self, sampling: SamplingParams, spec: SpecConfig) -> None:
        """The chat's settings, for the fields a request leaves out (from now on)."""
        self.sampling, self.spec = sampling, spec
        if self.server is not None:
            self.server.sampling, self.server.spec = sampling, spec

    def restore(self) -> None:
        """Start the server if it ran when the app last closed."""
        s = self.settings
        if s is not None and s.server_on and not self.running:
            self.start(s.server_port)

    def start(self, port: int = DEFAULT_PORT) -> None:
        if self.running:
            return
        try:
            server = LocalServer(self.host, port=port, sampling=self.sampling, spec=self.spec)
            server.start()
        except OSError as exc:
            self.server = None
            self.message = f"Could not listen on port {port}: {exc.strerror or exc}"
            self.state_changed.emit(False, self.message)
            return
        server.on_answered = self.request_answered.emit  # from HTTP threads: queued
        self.server = server
        self._remember(True, port)
        self.message = f"Serving the loaded models at {server.url}/v1"
        self.state_changed.emit(True, self.message)

    def stop(self, remember: bool = True) -> None:
        """Stop serving; ``remember=False`` when the app closes (it starts again next time)."""
        if self.server is not None:
            self.server.on_answered = None
            self.server.stop()
            self.server = None
        if remember:
            self._remember(False, None)
        self.message = "Local server off."
        self.state_changed.emit(False, self.message)

    def _remember(self, on: bool, port: int | None) -> None:
        s = self.settings
        if s is None or (s.server_on == on and (port is None or s.server_port == port)):
            return
        s.server_on = on
        if port is not None:
            s.server_port = port
        try:
            s.save()
        except OSError:
            pass  # the server runs; only the next start's memory of it is lost
