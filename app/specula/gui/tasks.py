"""The one way the GUI runs background work: :func:`start_task`.

Modelled on Anki's ``aqt.operations`` (``QueryOp(...).success(...).failure(...)``):
the function runs on a thread pool, and its callbacks run on the GUI thread,
only while the owning widget exists: ``on_done(result)``, ``on_failed(TaskError)``
(the failure as one sentence with a kind, never a traceback in a dialog) and,
optionally, ``on_item(partial)`` for progress or results as they come (one
header after another). The function gets a :class:`TaskContext`: it
``emit()``s items and calls ``check()`` between steps; :meth:`Task.cancel`
(typing again, choosing another model) makes ``check()`` raise
:class:`~specula.core.cancel.Cancelled`, which is never reported as a failure,
and nothing the task still sends reaches the callbacks (an HTTP request in
flight finishes in the background and is ignored). Header reads, compatibility
checks, scans, searches and removals all go through here.

When the application quits, every task still running is cancelled and sends
nothing more: the Qt objects that carry its results to the GUI thread are
deleted with the application while the request in flight may still finish
(a hub search, Discover's suggestions), and a signal sent from a deleted
object is an error (:func:`_closing_down`).
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, Signal, SignalInstance

from specula.core.cancel import Cancelled
from specula.core.gguf.model_info import GGUFError
from specula.core.hub.errors import HubError

log = logging.getLogger("specula.gui.tasks")


@dataclass(frozen=True)
class TaskError:
    """A failure as the pages show it: a kind (offline, not_found, ...) and one sentence."""

    kind: str
    message: str


def describe_error(exc: BaseException) -> TaskError:
    if isinstance(exc, HubError):
        return TaskError(exc.kind.value, exc.message)
    if isinstance(exc, GGUFError):
        return TaskError("bad_gguf", str(exc))
    if isinstance(exc, OSError):
        return TaskError("os", f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    return TaskError("error", f"{type(exc).__name__}: {exc}")


class TaskContext:
    """What the background function sees: a cancel flag and a way to send partial results."""

    def __init__(self, relay: _Relay) -> None:
        self._relay = relay
        self.cancel_event = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` when the task was cancelled."""
        if self.cancel_event.is_set():
            raise Cancelled

    def emit(self, item: object) -> None:
        """Send a partial result to the GUI thread (dropped once cancelled)."""
        if not self.cancel_event.is_set():
            _send(self._relay.item_ready, item)


class _Relay(QObject):
    item_ready = Signal(object)
    """The task sent a partial result."""
    succeeded = Signal(object)
    """The task returned this value."""
    failed = Signal(object)
    """The task raised; a TaskError."""


class _Runner(QRunnable):
    def __init__(self, fn: Callable[[TaskContext], Any], ctx: TaskContext, relay: _Relay) -> None:
        super().__init__()
        self._fn, self._ctx, self._relay = fn, ctx, relay

    def run(self) -> None:
        try:
            result = self._fn(self._ctx)
        except Cancelled:
            _send(self._relay.failed, None)
        except Exception as exc:  # reported to the page, never raised into Qt
            log.debug("task failed\n%s", traceback.format_exc())
            _send(self._relay.failed, describe_error(exc))
        else:
            _send(self._relay.succeeded, result)


_quitting = threading.Event()  # the application is quitting: tasks send nothing more


def _send(signal: SignalInstance, value: object) -> None:
    """Emit from the worker thread, unless the application is quitting (its relay may be
    gone with it; the send that races the deletion is dropped, any other error raised)."""
    if _quitting.is_set():
        return
    try:
        signal.emit(value)
    except RuntimeError:
        if not _quitting.is_set():
            raise


def _closing_down() -> None:
    """The application quits: cancel every task still running; none sends anything more."""
    _quitting.set()
    for ctx in list(_live.values()):
        ctx.cancel_event.set()


def _watch_quit() -> None:
    """Call :func:`_closing_down` when this application quits (once per application)."""
    app = QCoreApplication.instance()
    if app is not None and not app.property("specula_tasks_watch_quit"):
        app.setProperty("specula_tasks_watch_quit", True)
        _quitting.clear()  # a new application (the tests make one per session)
        app.aboutToQuit.connect(_closing_down)


class Task:
    """The GUI thread's handle on one background task (a plain object: safe to keep)."""

    def __init__(self) -> None:
        self.ctx: TaskContext | None = None
        self.done = False

    def cancel(self) -> None:
        """Stop at the task's next check and ignore whatever it still sends."""
        if self.ctx is not None:
            self.ctx.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.ctx is not None and self.ctx.cancelled


_live: dict[_Relay, TaskContext] = {}  # the running tasks (the relays kept alive here)


def start_task(owner: QObject, fn: Callable[[TaskContext], Any], *,
               on_done: Callable[[Any], None] | None = None,
               on_failed: Callable[[TaskError], None] | None = None,
               on_item: Callable[[Any], None] | None = None,
               pool: QThreadPool | None = None) -> Task:
    """Run ``fn(ctx)`` on ``pool`` (the global one by default); callbacks run on the GUI thread
    while ``owner`` exists and the task was not cancelled."""
    _watch_quit()
    relay = _Relay()
    task = Task()
    ctx = TaskContext(relay)
    task.ctx = ctx
    _live[relay] = ctx
    alive = [True]

    def _owner_gone() -> None:
        alive[0] = False

    owner.destroyed.connect(_owner_gone)

    def _wanted() -> bool:
        return alive[0] and not ctx.cancelled

    def _end() -> None:
        _live.pop(relay, None)
        relay.deleteLater()
        try:
            owner.destroyed.disconnect(_owner_gone)
        except (RuntimeError, TypeError):
            pass
        task.done = True

    def _item(value: object) -> None:
        if _wanted() and on_item is not None:
            on_item(value)

    def _ok(value: object) -> None:
        wanted = _wanted()
        _end()
        if wanted and on_done is not None:
            on_done(value)

    def _bad(error: TaskError | None) -> None:
        wanted = _wanted()
        _end()
        if wanted and error is not None and on_failed is not None:
            on_failed(error)

    relay.item_ready.connect(_item)
    relay.succeeded.connect(_ok)
    relay.failed.connect(_bad)
    (pool or QThreadPool.globalInstance()).start(_Runner(fn, ctx, relay))
    return task
