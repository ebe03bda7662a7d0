"""LocalServer: bind, serve on a background thread, stop; the object the CLI and the GUI hold."""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from specula.core.engine.config import DEFAULT_MODE, SpecConfig
from specula.core.engine.events import Done, StopReason
from specula.core.engine.sampling.rules import SamplingParams
from specula.server.app import Answered, SpeculaHTTPServer
from specula.server.browser import BrowserPolicy
from specula.server.connections import HEAD_TIMEOUT_S, Connections
from specula.server.queue import EngineHost, ServedModel
from specula.server.render import RENDER_TIMEOUT_S

log = logging.getLogger("specula.server")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1234  # LM Studio's port: clients configured for it work unchanged


class RemoteBindingRefused(ValueError):
    """Binding beyond this machine without --allow-remote and an API key."""


class BadApiKey(ValueError):
    """An API key no client could send: blank, with spaces, or not printable ASCII."""


def check_api_key(key: str | None) -> None:
    """Refuse at start a key that would lock every client out.

    A Bearer token travels in an HTTP header: clients send header values as
    ASCII (httpx, the OpenAI client's transport, refuses anything else) and a
    token has no spaces (RFC 6750). So a key must be visible ASCII, 0x21-0x7E;
    a blank one would otherwise bind 0.0.0.0 with a key nobody can match.
    """
    if key is None:
        return
    if not key.strip():
        raise BadApiKey("The API key is empty or only whitespace; give a real key "
                        "(--api-key KEY or SPECULA_API_KEY).")
    bad = sorted({c for c in key if not "\x21" <= c <= "\x7e"})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise BadApiKey(f"The API key may contain only visible ASCII characters (no spaces, "
                        f"no accents), because HTTP clients send it as ASCII; it contains {shown}.")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def check_binding(host: str, allow_remote: bool, api_key: str | None) -> None:
    """Only loopback by default: a model server on the network answers anyone who finds it."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise RemoteBindingRefused(
            f"Binding to {host} would expose the server beyond this machine; "
            "pass --allow-remote (and an API key) to do that on purpose.")
    if not api_key:
        raise RemoteBindingRefused(
            f"Binding to {host} needs an API key: --api-key KEY or SPECULA_API_KEY.")


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


class LocalServer:
    """An OpenAI-compatible server over an :class:`EngineHost`.

    ``sampling`` holds the defaults for fields a request leaves out (the
    app's preset; temperature 0 = greedy unless the request says otherwise);
    ``spec`` the default speculative settings (None: the adaptive mode for
    every request, which decides step by step whether drafting pays with
    whatever pair is loaded then, since the GUI may change the pair while the
    server runs).
    """

    def __init__(self, host: EngineHost, *, bind: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 api_key: str | None = None, allow_remote: bool = False,
                 sampling: SamplingParams | None = None, spec: SpecConfig | None = None,
                 max_connections: int | None = None,
                 render_timeout_s: float = RENDER_TIMEOUT_S,
                 head_timeout_s: float = HEAD_TIMEOUT_S,
                 allowed_hosts: Sequence[str] = (), cors_origins: Sequence[str] = ()) -> None:
        check_api_key(api_key or None)
        check_binding(bind, allow_remote, api_key)
        self.host = host
        self.bind = bind
        # who may ask from a browser: the Host names and web origins (server/browser.py)
        self.browser = BrowserPolicy(bind, tuple(allowed_hosts), tuple(cors_origins))
        self.port = port
        self.api_key = api_key or None
        self.sampling = sampling or SamplingParams()
        self.spec = spec
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections  # None: from the open-file limit
        self.render_timeout_s = render_timeout_s  # the chat template's time limit per request
        self.finished: deque[Finished] = deque(maxlen=100)
        # Called on the HTTP thread with each request's Finished (the app's request log).
        self.on_finished: Callable[[Finished], None] | None = None
        # Called on the HTTP thread with every answered request, refusals included.
        self.on_answered: Callable[[Answered], None] | None = None
        self._httpd: SpeculaHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def spec_for(self, served: ServedModel) -> SpecConfig:
        if self.spec is not None:
            return self.spec
        return SpecConfig(mode=DEFAULT_MODE)

    def answered(self, a: Answered) -> None:
        """A request was answered (any status): tell the listener (the app's log)."""
        if self.on_answered is not None:
            try:
                self.on_answered(a)
            except Exception:  # a listener's bug never costs the connection
                log.exception("request listener failed")

    def record(self, request_id: str, done: Done | None) -> Finished:
        stats = done.stats if done else None
        f = Finished(request_id, done.stop_reason if done else None,
                     len(done.token_ids) if done else 0,
                     stats.tokens_per_s if stats else 0.0, stats.drafted if stats else 0,
                     stats.accepted if stats else 0, stats.mode if stats else "")
        self.finished.append(f)
        if self.on_finished is not None:
            try:
                self.on_finished(f)
            except Exception:  # a listener's bug never costs the request its answer
                log.exception("request listener failed")
        log.info("%s: %s, %d tokens", request_id, f.stop_reason.value if f.stop_reason else
                 "failed", f.tokens)
        return f

    @property
    def url(self) -> str:
        """``http://host:port`` (the real port once started, also when 0 was asked for)."""
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _bind(self) -> SpeculaHTTPServer:
        if self._httpd is None:
            self._httpd = SpeculaHTTPServer((self.bind, self.port), self, self.max_connections,
                                            self.head_timeout_s)
            self.port = int(self._httpd.server_address[1])
        return self._httpd

    def start(self) -> None:
        """Bind (raises OSError when the port is taken) and serve on a daemon thread."""
        if self.running:
            return
        httpd = self._bind()
        self._thread = threading.Thread(target=httpd.serve_forever, name="specula-http",
                                        daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        """Serve on the calling thread until :meth:`stop` (or Ctrl-C)."""
        self._bind().serve_forever()

    @property
    def connections(self) -> int:
        """Client connections open now."""
        return len(self._httpd.conns) if self._httpd is not None else 0

    @property
    def conns(self) -> Connections | None:
        """The connection table (its timeouts and counters), once bound."""
        return self._httpd.conns if self._httpd is not None else None

    def stop(self) -> None:
        """Stop accepting requests and close every connection (running replies end with it)."""
        if self._httpd is not None:
            if self.running:
                self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
