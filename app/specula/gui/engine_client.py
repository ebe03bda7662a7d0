"""The GUI thread's handle on the engine worker: requests out, state and replies back.

Everything here runs on the GUI thread. Requests go to the worker through
private queued signals; results come back through the worker's signals and
are kept as state (what is loaded, on which backend) or routed to the
:class:`~specula.gui.engine_worker.ReplyHandle` they belong to.
"""

from __future__ import annotations

import itertools
import threading

from PySide6.QtCore import QObject, Qt, QThread, Signal

from specula.core.engine.config import SpecConfig
from specula.core.engine.engine import EngineOptions
from specula.core.engine.events import Done
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.gguf.compat import CompatReport
from specula.core.gguf.draft_head import HeadInfo
from specula.core.gguf.model_info import ModelInfo
from specula.gui.engine_worker import EngineWorker, ReplyBatch, ReplyHandle


class EngineClient(QObject):
    target_loaded = Signal(object)
    """A target finished loading (ModelInfo)."""
    draft_loaded = Signal(object, object)
    """A draft finished loading (ModelInfo, CompatReport)."""
    draft_unloaded = Signal()
    """No draft is loaded any more."""
    head_loaded = Signal(object)
    """A draft head (EAGLE-3, DFlash, DSpark) loaded in the draft's place (HeadInfo)."""
    head_unloaded = Signal()
    """No draft head is loaded any more."""
    target_unloaded = Signal()
    """The target was ejected; no model is loaded."""
    load_started = Signal(str, str)
    """A load of ``kind`` began for this path."""
    load_progressed = Signal(str, float)
    """A load of ``kind`` reached this fraction (of its current step)."""
    load_step = Signal(str, str)
    """A load of ``kind`` began a named step after reading the file ("Measuring the pair")."""
    load_failed = Signal(str, str)
    """A load of ``kind`` failed with this message."""
    load_cancelled = Signal(str)
    """A load of ``kind`` was cancelled."""
    draft_refused = Signal(object)
    """A draft was refused as incompatible (CompatReport); load_failed("draft", ...) follows."""
    busy_changed = Signal(bool)
    """A reply started (True) or the last one ended (False)."""
    notice = Signal(str)
    """A sentence about the user's data the engine had to set aside (the window shows it)."""

    _req_configure = Signal(object)
    _req_load_target = Signal(str, object)
    _req_load_draft = Signal(str, object)
    _req_unload_draft = Signal()
    _req_unload_target = Signal()
    _req_generate = Signal(int, object, object, object, object, object)
    _req_shutdown = Signal()
    _req_job = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.target_info: ModelInfo | None = None
        self.draft_info: ModelInfo | None = None
        self.draft_report: CompatReport | None = None
        self.head_info: HeadInfo | None = None  # a loaded draft head (load_draft loads heads too)
        self.backend = ""
        self.n_threads = 0
        self.mtp_layers = 0  # the loaded target's MTP layers (a built-in draft)
        self.n_ctx = 0  # the loaded target's context length, as the engine runs it
        self.builtin_on = True  # the picker's "Built-in (MTP)" is chosen (no draft model)
        self._pending_loads: list[tuple[str, str]] = []  # (kind, path) asked, not yet answered
        self._load_cancel = threading.Event()
        self._replies: dict[int, ReplyHandle] = {}
        self._ids = itertools.count(1)

        self._thread = QThread()
        self._thread.setObjectName("specula-engine")
        self._worker = EngineWorker()
        self._worker.moveToThread(self._thread)
        q = Qt.ConnectionType.QueuedConnection
        w = self._worker
        self._req_configure.connect(w.configure, q)
        self._req_load_target.connect(w.load_target, q)
        self._req_load_draft.connect(w.load_draft, q)
        self._req_unload_draft.connect(w.unload_draft, q)
        self._req_unload_target.connect(w.unload_target, q)
        self._req_generate.connect(w.generate, q)
        self._req_shutdown.connect(w.shutdown, q)
        self._req_job.connect(w.run_job, q)
        w.target_loaded.connect(self._on_target_loaded, q)
        w.draft_loaded.connect(self._on_draft_loaded, q)
        w.draft_unloaded.connect(self._on_draft_unloaded, q)
        w.head_loaded.connect(self._on_head_loaded, q)
        w.head_unloaded.connect(self._on_head_unloaded, q)
        w.target_unloaded.connect(self._on_target_unloaded, q)
        w.load_progressed.connect(self.load_progressed, q)
        w.load_step.connect(self.load_step, q)
        w.load_failed.connect(self._on_load_failed, q)
        w.load_cancelled.connect(self._on_load_cancelled, q)
        w.draft_refused.connect(self.draft_refused, q)
        w.notice.connect(self.notice, q)
        w.batch_ready.connect(self._on_batch, q)
        w.reply_finished.connect(self._on_finished, q)
        w.reply_failed.connect(self._on_failed, q)
        self._thread.start()

    # -- state ---------------------------------------------------------------
    @property
    def has_target(self) -> bool:
        return self.target_info is not None

    @property
    def has_draft(self) -> bool:
        return self.draft_info is not None

    @property
    def has_builtin_draft(self) -> bool:
        """The target drafts for itself (MTP) and the picker has that chosen."""
        return self.target_info is not None and self.mtp_layers > 0 and self.builtin_on

    @property
    def has_head(self) -> bool:
        return self.head_info is not None

    @property
    def can_speculate(self) -> bool:
        """A draft model or a draft head is loaded, or the target's built-in MTP draft is chosen."""
        return self.has_draft or self.has_head or self.has_builtin_draft

    def is_loading(self, kind: str) -> bool:
        return any(k == kind for k, _p in self._pending_loads)

    def _answered(self, kind: str) -> None:
        for i, (k, _p) in enumerate(self._pending_loads):
            if k == kind:
                del self._pending_loads[i]
                return

    def draft_already_coming(self, path: str) -> bool:
        """A load of this draft is queued after the last queued target load, so the draft
        it brings is the one the newest target gets: asking again would load (and measure
        the pair) twice."""
        for kind, p in reversed(self._pending_loads):
            if kind == "target":
                return False
            if p == path:
                return True
        return False

    @property
    def busy(self) -> bool:
        return bool(self._replies)

    # -- requests ------------------------------------------------------------
    def configure(self, settings: EngineOptions) -> None:
        """Engine options for the next target load."""
        self._req_configure.emit(settings)

    def load_target(self, path: str) -> None:
        self._load_cancel = threading.Event()
        self._pending_loads.append(("target", path))
        self.load_started.emit("target", path)
        self._req_load_target.emit(path, self._load_cancel)

    def load_draft(self, path: str) -> None:
        """Load ``path`` as the draft: a draft model, or a head (the worker reads which);
        once: a second request for a draft already queued behind the newest target load is
        dropped."""
        if self.draft_already_coming(path):
            return
        self._load_cancel = threading.Event()
        self._pending_loads.append(("draft", path))
        self.load_started.emit("draft", path)
        self._req_load_draft.emit(path, self._load_cancel)

    def unload_draft(self) -> None:
        self._req_unload_draft.emit()

    def unload_target(self) -> None:
        """Eject the target (and the draft); a reply in flight is stopped first."""
        self.stop_all()
        self._req_unload_target.emit()

    def cancel_load(self) -> None:
        self._load_cancel.set()

    def generate(
        self, messages: list[dict[str, str]], sampling: SamplingParams, spec: SpecConfig,
        prefix_ids: list[int] | None = None,
    ) -> ReplyHandle:
        """Queue a reply (or, with ``prefix_ids``, the continuation of a partial one)."""
        reply = ReplyHandle(next(self._ids), self)
        was_busy = self.busy
        self._replies[reply.request_id] = reply
        if not was_busy:
            self.busy_changed.emit(True)
        self._req_generate.emit(reply.request_id, messages, sampling, spec, reply.cancel_event,
                                prefix_ids)
        return reply

    def stop_all(self) -> None:
        for reply in self._replies.values():
            reply.stop()

    def submit_job(self, job: object) -> None:
        """Run ``job(engine)`` on the engine thread after what is queued (any thread may call)."""
        self._req_job.emit(job)

    def shutdown(self, timeout_ms: int = 10000) -> None:
        """Stop what runs, close the engine on its thread and end the thread."""
        if not self._thread.isRunning():
            return
        self.stop_all()
        self._load_cancel.set()
        self._req_shutdown.emit()
        if not self._thread.wait(timeout_ms):
            self._thread.terminate()
            self._thread.wait()

    # -- results -------------------------------------------------------------
    def _on_target_loaded(self, info: ModelInfo, backend: str, n_threads: int,
                          mtp_layers: int = 0, n_ctx: int = 0) -> None:
        self._answered("target")
        self.target_info, self.backend, self.n_threads = info, backend, n_threads
        self.mtp_layers, self.n_ctx = mtp_layers, n_ctx
        self.target_loaded.emit(info)

    def _on_draft_loaded(self, info: ModelInfo, report: CompatReport) -> None:
        self._answered("draft")
        self.draft_info, self.draft_report = info, report
        self.draft_loaded.emit(info, report)

    def _on_draft_unloaded(self) -> None:
        self.draft_info = self.draft_report = None
        self.draft_unloaded.emit()

    def _on_head_loaded(self, info: HeadInfo) -> None:
        self._answered("draft")
        self.head_info = info
        self.head_loaded.emit(info)

    def _on_head_unloaded(self) -> None:
        self.head_info = None
        self.head_unloaded.emit()

    def _on_target_unloaded(self) -> None:
        self.target_info = None
        self.mtp_layers = self.n_ctx = 0
        self.target_unloaded.emit()

    def _on_load_failed(self, kind: str, message: str) -> None:
        self._answered(kind)
        self.load_failed.emit(kind, message)

    def _on_load_cancelled(self, kind: str) -> None:
        self._answered(kind)
        self.load_cancelled.emit(kind)

    def _on_batch(self, request_id: int, batch: ReplyBatch) -> None:
        reply = self._replies.get(request_id)
        if reply is not None:
            reply.batch_arrived.emit(batch)

    def _end(self, request_id: int) -> ReplyHandle | None:
        reply = self._replies.pop(request_id, None)
        if reply is not None:
            reply.done = True
            if not self._replies:
                self.busy_changed.emit(False)
        return reply

    def _on_finished(self, request_id: int, done: Done) -> None:
        reply = self._end(request_id)
        if reply is not None:
            reply.finished.emit(done)
            reply.deleteLater()

    def _on_failed(self, request_id: int, message: str) -> None:
        reply = self._end(request_id)
        if reply is not None:
            reply.failed.emit(message)
            reply.deleteLater()
