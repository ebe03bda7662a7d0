"""The HTTP side: routes, authentication, waiting on the engine, writing replies.

Why the standard library's ThreadingHTTPServer and no framework: the server
has four routes, one engine thread does the real work, and every HTTP thread
mostly waits on a queue; a framework would add a dependency (and for ASGI an
event loop bridged to the engine thread) without making anything faster. Each
connection gets a thread, so a waiting request never blocks /v1/models;
server/connections.py bounds how many there are and how long each phase of a
connection may last, and the API key is checked on the request head, before
any body is read.

A client that goes away is noticed two ways: a failed write while streaming,
and a zero-byte peek on the socket while waiting (non-streaming replies and
requests still in the queue). Either sets the request's cancel Event, which the
generator checks every step, so the engine is free for the next request at once.
"""

from __future__ import annotations

import errno
import hmac
import json
import logging
import queue
import select
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from specula.core.engine.events import Done, StopReason
from specula.core.engine.grammar.compile import GRAMMAR_BUDGET_MESSAGE
from specula.server import streaming as S
from specula.server.connections import HEAD_TIMEOUT_S, Connections, Phase, fd_limited_max
from specula.server.errors import OpenAIError
from specula.server.jobs import Message, generation_job, render_chat
from specula.server.limits import content_length, parse_json
from specula.server.logprobs import TokenLogprob
from specula.server.queue import QueueFull, ServedModel
from specula.server.schemas import GenerationRequest, parse_request
from specula.server.structured import bind_tools

if TYPE_CHECKING:
    from specula.server.local import Finished, LocalServer

log = logging.getLogger("specula.server")

POLL_S = 0.2  # how often a waiting thread checks whether its client is still there
BACKLOG = 128  # the standard library listens with 5: a burst of 40 clients got resets
SOCKET_TIMEOUT_S = 60.0  # one blocked send or receive (a client that stopped reading)


class SpeculaHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = BACKLOG

    def __init__(self, address: tuple[str, int], owner: LocalServer,
                 max_connections: int | None = None,
                 head_timeout_s: float = HEAD_TIMEOUT_S) -> None:
        self.owner = owner
        super().__init__(address, Handler)
        self.conns = Connections(max_connections or fd_limited_max(), head_timeout_s)

    def get_request(self) -> tuple[socket.socket, Any]:
        # At the cap, new clients wait in the listen backlog (never reset) while the
        # oldest idle connection is closed to make room; serve_forever asks again.
        if not self.conns.wait_for_room(0.5):
            raise OSError("every connection is busy")
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):  # out of descriptors: shed, back off
                log.warning("out of file descriptors with %d connections open", len(self.conns))
                self.conns.max = max(4, len(self.conns) - 1)
                time.sleep(0.05)
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        self.conns.add(request)
        try:
            super().process_request(request, client_address)
        except Exception:  # no thread could start: drop it cleanly
            self.conns.remove(request)
            raise

    def shutdown_request(self, request: Any) -> None:
        self.conns.remove(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self.conns.close_all()


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


class Handler(BaseHTTPRequestHandler):
    server: SpeculaHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "Specula"
    timeout = SOCKET_TIMEOUT_S
    _checked = 0.0  # when _wait last looked at the socket
    _requests = 0  # served on this connection so far
    _answered = False  # a status line went out for the current request
    _status = 0  # its status (0: none went out)
    _message = ""  # the refusal's message
    _finished: Finished | None = None  # the generation it ran
    _cors: Mapping[str, str] = MappingProxyType({})  # an allowed origin's CORS headers

    # -- plumbing --------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def handle_one_request(self) -> None:
        self.server.conns.set_phase(self.connection, Phase.WAITING, keepalive=self._requests > 0)
        self._requests += 1
        self._answered = False
        self._cors = MappingProxyType({})
        self._head_checked: bool | None = None
        self._status, self._message, self._finished = 0, "", None
        super().handle_one_request()
        if self._status:  # a request was answered: logged whatever its status
            self.server.owner.answered(Answered(
                str(self.command or "?"), str(getattr(self, "path", "")).split("?", 1)[0],
                self._status, self._message, self._finished))

    def parse_request(self) -> bool:
        """The head is in: check who may ask (server/browser.py) and the key before
        reading any body, then time the body."""
        if not super().parse_request() or not self._head_ok():
            return False
        self.server.conns.set_phase(self.connection, Phase.BODY)
        return True

    def handle_expect_100(self) -> bool:
        return self._head_ok() and super().handle_expect_100()

    def _head_ok(self) -> bool:
        """The browser checks (Host, Origin, Transfer-Encoding), then the key; once per
        request (the standard library's parse_request may ask through Expect: 100)."""
        if self._head_checked is None:
            origin = self.headers.get("Origin")
            try:
                self.server.owner.browser.check(self.headers.get("Host"), origin,
                                                self.headers.items())
            except OpenAIError as exc:
                self.close_connection = True  # its body is never read
                self._error(exc)
                self._head_checked = False
                return False
            self._cors = self.server.owner.browser.cors_headers(origin)
            # a preflight carries no key (browsers never send one with it)
            self._head_checked = self.command == "OPTIONS" or self._authorized()
        return self._head_checked

    def send_response(self, code: int, message: str | None = None) -> None:
        self._answered = True
        self._status = code
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (bad request line, huge headers) as JSON too."""
        self.close_connection = True
        if code == HTTPStatus.NOT_IMPLEMENTED:  # a method nobody serves: as PUT or DELETE
            code, message = HTTPStatus.METHOD_NOT_ALLOWED, f"Method {self.command} is not allowed."
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        self._message = message or phrase
        self._send_json(code, OpenAIError(code, message or phrase, code=phrase.lower()
                                          .replace(" ", "_")).body())

    def _send_json(self, status: int, obj: dict[str, Any],
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj, ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in {**self._cors, **(headers or {})}.items():
                self.send_header(k, v)
            if self.close_connection:  # say so: the client must not send more on it
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _error(self, exc: OpenAIError) -> None:
        if exc.status == 499:  # the client is gone: nobody to answer
            self.close_connection = True
            return
        self._message = exc.message
        self._send_json(exc.status, exc.body(), exc.headers)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _authorized(self) -> bool:
        key = self.server.owner.api_key
        if not key:
            return True
        given = self.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        # Header values arrive decoded as latin-1: encoding back gives the bytes sent,
        # compared in constant time with the key's (an ASCII key: see check_api_key).
        sent = token.strip().encode("latin-1", errors="replace")
        if scheme.lower() == "bearer" and hmac.compare_digest(sent, key.encode()):
            return True
        self.close_connection = True  # no keep-alive, and its body is never read
        self._error(OpenAIError(401, "Incorrect or missing API key: send 'Authorization: "
                                "Bearer <key>'.", code="invalid_api_key"))
        return False

    def _body(self) -> dict[str, Any]:
        try:
            length = content_length(self.headers.get("Content-Length"))
        except OpenAIError:
            self.close_connection = True  # the body (if any) stays unread
            raise
        raw = self.rfile.read(length)
        if len(raw) < length:  # the client stopped sending (it may still be reading)
            self.close_connection = True
            raise OpenAIError(400, f"The body ended after {len(raw)} of the {length} bytes its "
                              "Content-Length announced.", code="incomplete_body")
        self.server.conns.set_phase(self.connection, Phase.BUSY)
        return parse_json(raw)

    # -- routes ----------------------------------------------------------------

    def do_GET(self) -> None:
        self.server.conns.set_phase(self.connection, Phase.BUSY)
        path = self.path.split("?", 1)[0].rstrip("/")
        served = self.server.owner.host.served()
        if path in ("/v1/models", "/models"):
            data = [self._model_card(served)] if served else []
            self._send_json(200, {"object": "list", "data": data})
        elif path.startswith("/v1/models/") and served and served.matches(path[11:]):
            self._send_json(200, self._model_card(served))
        elif path.startswith("/v1/models/"):
            self._error(OpenAIError(404, f"The model '{path[11:]}' does not exist.",
                                    param="model", code="model_not_found"))
        elif path in ("/health", ""):
            self._send_json(200, {"status": "ok" if served else "no model loaded"})
        else:
            self._error(OpenAIError(404, f"Unknown path {path}.", code="unknown_url"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        kinds = {"/v1/chat/completions": "chat", "/chat/completions": "chat",
                 "/v1/completions": "text", "/completions": "text"}
        if path not in kinds:
            self.close_connection = True  # its body stays unread
            self._error(OpenAIError(404, f"Unknown path {path}.", code="unknown_url"))
            return
        try:
            self._generate(kinds[path], self._body())
        except OpenAIError as exc:
            if not self._answered:
                self._error(exc)
        except Exception as exc:  # a bug must cost one request, never the connection unanswered
            log.exception("request failed")
            self.close_connection = True
            if not self._answered:
                self._error(OpenAIError(500, f"Internal error: {type(exc).__name__}: {exc}",
                                        type="server_error"))

    def do_OPTIONS(self) -> None:
        """A CORS preflight from an allowed origin (others were refused with the head)."""
        self.server.conns.set_phase(self.connection, Phase.BUSY)
        try:
            self.send_response(204)
            for k, v in self.server.owner.browser.preflight_headers(
                    self.headers.get("Origin")).items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            self.close_connection = True

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._error(OpenAIError(405, f"Method {self.command} is not allowed.",
                                code="method_not_allowed"))

    do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _model_card(self, served: ServedModel) -> dict[str, Any]:
        return {
            "id": served.id, "object": "model", "created": served.created, "owned_by": "local",
            "specula": {"concurrency": 1, "draft": served.draft_id, "n_ctx": served.n_ctx,
                        "backend": served.backend, "path": served.target_path},
        }

    # -- generation ------------------------------------------------------------

    def _generate(self, kind: str, body: dict[str, Any]) -> None:
        owner = self.server.owner
        served = owner.host.served()
        if served is None:
            raise OpenAIError(503, "No model is loaded.", code="model_not_loaded",
                              type="server_error")
        req = parse_request(kind, body, owner.sampling, owner.spec_for(served))
        if not served.matches(req.model):
            raise OpenAIError(404, f"The model '{req.model}' does not exist; this server "
                              f"serves '{served.id}'.", param="model", code="model_not_found")
        if kind == "chat" and served.template is not None:  # here, not on the engine thread
            bind_tools(req, served.template)
            req.rendered = render_chat(served.template, req, served.n_ctx, owner.render_timeout_s)
        out: queue.Queue[Message] = queue.Queue()
        cancel = threading.Event()
        try:
            owner.host.submit(generation_job(req, out, cancel, served.template,
                                             owner.render_timeout_s))
        except QueueFull as exc:
            raise OpenAIError(429, f"The server is busy: {exc}; retry in {exc.retry_after_s} s.",
                              code="queue_full", type="rate_limit_error",
                              headers={"Retry-After": str(exc.retry_after_s)}) from exc
        kind_, first = self._wait(out, cancel)
        if kind_ == "error":
            raise first
        if kind_ == "fail":
            raise OpenAIError(500, str(first), type="server_error")
        prompt_tokens = int(first)
        rid = S.new_id(kind)
        if req.stream:
            self._stream(req, rid, served, prompt_tokens, out, cancel)
        else:
            self._whole(req, rid, served, prompt_tokens, out, cancel)

    def _wait(self, out: queue.Queue[Message], cancel: threading.Event) -> Message:
        """The job's next message; a vanished client cancels the job meanwhile.

        The socket is checked at least every POLL_S, also while messages keep
        arriving (a non-streaming reply produces text without writing any).
        """
        while True:
            now = time.monotonic()
            if now - self._checked >= POLL_S:
                self._checked = now
                if not cancel.is_set() and self._client_gone():
                    log.info("client left; cancelling its request")
                    cancel.set()
            try:
                return out.get(timeout=POLL_S)
            except queue.Empty:
                pass

    def _drain(self, out: queue.Queue[Message], cancel: threading.Event,
               entries: list[TokenLogprob] | None = None) -> Done | str:
        """Messages up to the end of the reply: the Done, or a failure sentence
        (the tokens' log-probabilities collected into ``entries`` when given)."""
        while True:
            kind, value = self._wait(out, cancel)
            if kind == "text" and entries is not None:
                entries.extend(value[1])
            if kind == "done":
                assert isinstance(value, Done)
                return value
            if kind == "fail":
                return str(value)

    def _whole(self, req: GenerationRequest, rid: str, served: ServedModel, prompt_tokens: int,
               out: queue.Queue[Message], cancel: threading.Event) -> None:
        entries: list[TokenLogprob] = []
        done = self._drain(out, cancel, entries)
        if isinstance(done, str) or done.stop_reason is StopReason.ERROR:
            msg = done if isinstance(done, str) else done.message
            self._finished = self.server.owner.record(rid, None if isinstance(done, str) else done)
            if msg and msg.startswith(GRAMMAR_BUDGET_MESSAGE):  # the client's grammar: a 400
                param = req.structure.grammar_param if req.structure.grammar else "tools"
                raise OpenAIError(400, f"'{param}': {msg}", param=param, code="grammar_too_costly")
            raise OpenAIError(500, msg or "Generation failed.", type="server_error")
        self._finished = self.server.owner.record(rid, done)
        if cancel.is_set():
            self.close_connection = True
            return
        stats = S.spec_stats(done, served.draft_id)
        self._send_json(200, S.completion(req, rid, served.id, prompt_tokens, done, stats, entries),
                        {S.STATS_HEADER: S.stats_header(stats)})

    def _stream(self, req: GenerationRequest, rid: str, served: ServedModel, prompt_tokens: int,
                out: queue.Queue[Message], cancel: threading.Event) -> None:
        self.close_connection = True  # the stream ends when the connection does
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            for k, v in self._cors.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(S.sse(S.chunk(req, rid, served.id, role=True)))
        except OSError:
            cancel.set()
        choices = S.StreamChoices(req, rid, served.id)
        kind, value = "", None
        while not cancel.is_set():
            kind, value = self._wait(out, cancel)
            if kind != "text":
                break
            try:
                for c in choices.piece(*value):
                    self.wfile.write(S.sse(c))
                self.wfile.flush()
                gone = self._client_gone()  # a write into the socket buffer can still succeed
            except OSError:
                gone = True
            if gone:
                log.info("client left mid-stream; cancelling its request")
                cancel.set()
        if kind not in ("done", "fail"):
            value = self._drain(out, cancel)
        done = value
        self._finished = self.server.owner.record(rid, done if isinstance(done, Done) else None)
        if cancel.is_set():
            return
        try:
            if not isinstance(done, Done) or done.stop_reason is StopReason.ERROR:
                msg = done.message if isinstance(done, Done) else str(done)
                err = OpenAIError(500, msg or "Generation failed.", type="server_error")
                self.wfile.write(S.sse(err.body()))
            else:
                stats = S.spec_stats(done, served.draft_id)
                use = S.usage(prompt_tokens, done)
                for c in choices.end(done, usage=use, specula=stats):
                    self.wfile.write(S.sse(c))
                if req.include_usage:
                    self.wfile.write(S.sse(S.usage_chunk(req, rid, served.id, use, stats)))
            self.wfile.write(S.sse("[DONE]"))
            self.wfile.flush()
        except OSError:
            pass

