"""The engine worker: one long-lived QObject on its own QThread that owns the Engine.

The GUI reaches it only through queued signals (:class:`EngineClient` holds
the thread and routes results to :class:`ReplyHandle` objects); a reply or a load
stops through a ``threading.Event`` the engine checks every step, never a
signal to the busy thread. Token events are batched: the worker emits what
arrived every ~50 ms, with the latest statistics and one point per step, and
only right after a step, so a batch's tokens and its statistics always agree
(a token coloured as an accepted draft token is counted in Accepted).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from specula.core.engine.config import SpecConfig
from specula.core.engine.engine import (
    Cancelled,
    Engine,
    EngineOptions,
    IncompatibleDraft,
    LoadError,
)
from specula.core.engine.events import Done, StepEvent, TokenEvent
from specula.core.engine.native.load_log import short_of_memory
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import GenerationStats
from specula.core.gguf.compat import CompatReport
from specula.core.gguf.draft_head import is_head
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.hardware.offload import resolve_for_file
from specula.gui.stats.live_stats import StepPoint

log = logging.getLogger("specula.gui.worker")

BATCH_S = 0.05  # how often streamed tokens cross to the GUI thread
MEASURING_STEP = "Measuring the pair"  # the draft load's timing step (calibration.measure)


def _short_of_memory(exc: Exception) -> bool:
    """A load that failed for want of memory (llama.cpp's own reason says so)."""
    return isinstance(exc, LoadError) and short_of_memory(getattr(exc, "reason", ""))


@dataclass
class ReplyBatch:
    """What arrived since the previous batch."""

    tokens: list[TokenEvent] = field(default_factory=list)
    steps: list[StepPoint] = field(default_factory=list)
    stats: GenerationStats | None = None  # a snapshot of the running totals


class EngineWorker(QObject):
    """Lives on the engine thread; every slot runs there."""

    load_progressed = Signal(str, float)
    """A load of ``kind`` (target | draft) reached this fraction (of its current step)."""
    load_step = Signal(str, str)
    """A load of ``kind`` began a step after reading the file (its name, e.g. "Measuring the
    pair"); the fractions that follow are that step's."""
    target_loaded = Signal(object, str, int, int, int)
    """The target is ready: ModelInfo, backend name, thread count, MTP layers that draft,
    the context length it runs with (n_ctx, capped by its training length)."""
    draft_loaded = Signal(object, object)
    """The draft is ready: ModelInfo, CompatReport."""
    draft_unloaded = Signal()
    """The draft was unloaded (by request or because the target changed)."""
    head_loaded = Signal(object)
    """A draft head (EAGLE-3, DFlash, DSpark) is ready in the draft's place: its HeadInfo."""
    head_unloaded = Signal()
    """The draft head was unloaded (another draft chosen, none, or the target changed)."""
    target_unloaded = Signal()
    """The target (and any draft) was ejected: no model is loaded."""
    load_failed = Signal(str, str)
    """A load of ``kind`` failed with this human message."""
    draft_refused = Signal(object)
    """The draft cannot serve the target (CompatReport); load_failed follows."""
    load_cancelled = Signal(str)
    """The user cancelled a load of ``kind``."""
    notice = Signal(str)
    """Something of the user's was set aside while loading (a damaged n-gram cache): one
    sentence that says what and where it went; the load went on."""
    batch_ready = Signal(int, object)
    """Request id, ReplyBatch: tokens and statistics since the last batch."""
    reply_finished = Signal(int, object)
    """Request id, Done."""
    reply_failed = Signal(int, str)
    """Request id, a human message."""

    def __init__(self) -> None:
        super().__init__()
        self._engine: Any = None
        self._settings = EngineOptions()  # applied when a target is next loaded
        self._built_with: EngineOptions | None = None

    @Slot(object)
    def run_job(self, job: Any) -> None:
        """Run a local-server request on this thread (the job reports its own errors)."""
        try:
            job(self._engine)
        except Exception:
            log.error("server job failed\n%s", traceback.format_exc())

    @Slot(object)
    def configure(self, settings: EngineOptions) -> None:
        self._settings = copy.copy(settings)

    @Slot(str, object)
    def load_target(self, path: str, cancel: threading.Event) -> None:
        """Load ``path`` as the target; the pair in use is replaced only once it has loaded.

        New engine options build a new Engine beside the old one; the old one is closed
        only after the new target loaded. A load that fails leaves the old pair loaded and
        usable. Where the failure is llama.cpp running out of memory with the old pair
        still loaded, the old pair is freed and the new target tried alone; if that fails
        too, the old pair is loaded again (:meth:`_alone_or_restore`)."""
        def progress(frac: float) -> bool:
            self.load_progressed.emit("target", float(frac))
            return not cancel.is_set()

        old = self._engine
        engine: Any = None
        try:
            fresh = old is None or self._built_with != self._settings
            engine = Engine(copy.copy(self._settings)) if fresh else old
            engine.options.n_gpu_layers_target = resolve_for_file(
                self._settings.n_gpu_layers_target, path, self._settings.n_ctx)  # "auto"
            info = engine.load_target(path, progress=progress)
        except Exception as exc:  # every failure is reported, none escapes into Qt
            if engine is not None and engine is not old:
                engine.close()
            if old is not None and old.has_target and _short_of_memory(exc):
                self._alone_or_restore(path, progress, exc)
                return
            self._load_failed("target", path, exc)
            return
        had_draft = old is not None and bool(old.has_draft)
        had_head = old is not None and old.head_info is not None
        if engine is not old:
            if old is not None:
                old.close()
            self._engine, self._built_with = engine, copy.copy(self._settings)
        self._target_ready(info, had_draft, had_head)

    def _target_ready(self, info: ModelInfo, had_draft: bool, had_head: bool = False) -> None:
        if had_draft:
            self.draft_unloaded.emit()
        if had_head:
            self.head_unloaded.emit()
        self.target_loaded.emit(info, str(self._engine.backend), int(self._engine.n_threads),
                                int(self._engine.mtp_layers), int(self._engine.n_ctx))
        store = self._engine.ngrams
        if store is not None and store.notice:
            self.notice.emit(store.notice)

    def _alone_or_restore(self, path: str, progress: Any, first: Exception) -> None:
        """The new target did not fit beside the pair in use: free the pair, try the new
        target alone, and where that fails too, load the old pair again and say so."""
        old = self._engine
        old_options, old_built = copy.copy(old.options), self._built_with
        old_target = old.target_info.source
        old_draft = old.draft_info.source if old.has_draft else ""
        old_head = old.head_info.source if old.head_info is not None else ""
        old.close()
        self._engine = self._built_with = None
        if old_draft:
            self.draft_unloaded.emit()
        engine: Any = None
        try:
            engine = Engine(copy.copy(self._settings))
            engine.options.n_gpu_layers_target = resolve_for_file(
                self._settings.n_gpu_layers_target, path, self._settings.n_ctx)
            info = engine.load_target(path, progress=progress)
        except Exception as exc:
            if engine is not None:
                engine.close()
            restored = self._restore(old_options, old_built, old_target, old_draft, old_head)
            why = getattr(exc, "reason", "") or str(exc)
            self.load_failed.emit("target", (
                f"{Path(path).name} does not fit in memory beside the models in use "
                f"({getattr(first, 'reason', '') or first}), and alone it failed too: {why}. "
                + ("The models in use were loaded again." if restored else
                   "The models in use could not be loaded again: open them again.")))
            return
        self._engine, self._built_with = engine, copy.copy(self._settings)
        self.notice.emit(f"{Path(path).name} did not fit in memory beside the models in use, "
                         "so they were unloaded first.")
        self._target_ready(info, bool(old_draft), bool(old_head))

    def _restore(self, options: EngineOptions, built: EngineOptions | None, target: str,
                 draft: str, head: str = "") -> bool:
        """Load the old pair again after a failed swap; whether the target came back."""
        try:
            engine = Engine(options)
            info = engine.load_target(target)
        except Exception:
            log.error("restoring %s failed\n%s", target, traceback.format_exc())
            self.target_unloaded.emit()
            return False
        self._engine, self._built_with = engine, built
        self._target_ready(info, False)
        if head:  # the old pair's draft head, or its draft model
            try:
                self.head_loaded.emit(engine.load_head(head))
            except Exception:
                log.error("restoring the draft head %s failed\n%s", head, traceback.format_exc())
        if draft:
            try:
                report = engine.load_draft(draft)
                self.draft_loaded.emit(engine.draft_info, report)
            except Exception:
                log.error("restoring the draft %s failed\n%s", draft, traceback.format_exc())
        return True

    @Slot(str, object)
    def load_draft(self, path: str, cancel: threading.Event) -> None:
        def progress(frac: float) -> bool:
            self.load_progressed.emit("draft", float(frac))
            return not cancel.is_set()

        if self._engine is None or not self._engine.has_target:
            self.load_failed.emit("draft", "Load a target model before a draft model.")
            return
        def measuring(frac: float) -> None:
            if frac == 0.0:
                self.load_step.emit("draft", MEASURING_STEP)
            self.load_progressed.emit("draft", float(frac))

        loaded = self._engine.draft_info
        if loaded is not None and loaded.source == path and self._engine.compat is not None:
            # Already the draft of this target (a reload asked for it twice): loading and
            # measuring the pair again would give the same pair, twice as slowly.
            self.draft_loaded.emit(loaded, self._engine.compat)
            return
        try:
            self._engine.options.n_gpu_layers_draft = resolve_for_file(
                self._settings.n_gpu_layers_draft, path, self._settings.n_ctx)  # "auto"
            if is_head(read_model_info(path)):  # a head drafts in the draft model's place
                self._load_head(path)
                return
            report: CompatReport = self._engine.load_draft(path, progress=progress,
                                                           measuring=measuring)
        except Exception as exc:  # every failure is reported, none escapes into Qt
            self._load_failed("draft", path, exc)
            return
        self._drop_head()
        info: ModelInfo = self._engine.draft_info
        self.draft_loaded.emit(info, report)

    def _load_head(self, path: str) -> None:
        """The chosen draft is a head: it loads (or is refused with the reasons, before
        anything changes), then takes the draft model's place."""
        head = self._engine.load_head(path)
        if self._engine.has_draft:
            self._engine.unload_draft()
            self.draft_unloaded.emit()
        self.head_loaded.emit(head)

    def _drop_head(self) -> None:
        if self._engine is not None and self._engine.head_info is not None:
            self._engine.unload_head()
            self.head_unloaded.emit()

    def _load_failed(self, kind: str, path: str, exc: Exception) -> None:
        """One ladder for both loads: a cancel, a refused draft, a known or an unexpected error."""
        if isinstance(exc, Cancelled):
            self.load_cancelled.emit(kind)
        elif isinstance(exc, IncompatibleDraft):
            self.draft_refused.emit(exc.report)  # the page words it; load_failed follows
            self.load_failed.emit(kind, f"This draft cannot serve the target: {exc.report.reason()}")
        elif isinstance(exc, (LoadError, GGUFError)):
            self.load_failed.emit(kind, str(exc))
        else:
            log.error("%s load failed\n%s", kind, "".join(traceback.format_exception(exc)))
            self.load_failed.emit(kind, f"Could not load {path}: {exc}")

    @Slot()
    def unload_draft(self) -> None:
        """No draft: neither a draft model nor a head."""
        if self._engine is not None:
            self._engine.unload_draft()
        self._drop_head()
        self.draft_unloaded.emit()

    @Slot()
    def unload_target(self) -> None:
        """Eject: free both models (the engine is built again at the next load)."""
        if self._engine is not None:
            had_draft = bool(self._engine.has_draft)
            had_head = self._engine.head_info is not None
            self._engine.close()
            self._engine = None
            self._built_with = None
            if had_draft:
                self.draft_unloaded.emit()
            if had_head:
                self.head_unloaded.emit()
        self.target_unloaded.emit()

    @Slot(int, object, object, object, object, object)
    def generate(
        self, request_id: int, messages: list[dict[str, str]], sampling: SamplingParams,
        spec: SpecConfig, cancel: threading.Event, prefix_ids: list[int] | None = None,
    ) -> None:
        """Reply to ``messages``; with ``prefix_ids``, continue that partial reply instead.

        Continuing feeds the chat prompt plus the reply's own token ids, so the
        KV cache still holding them is reused and the reply goes on where it stopped.
        """
        if self._engine is None or not self._engine.has_target:
            self.reply_failed.emit(request_id, "Load a target model first.")
            return
        batch = ReplyBatch()
        last = time.monotonic()
        events: Iterator[object] | None = None
        try:
            if prefix_ids:
                prompt = [*self._engine.tokenize_chat(messages), *prefix_ids]
                events = self._engine.generate_tokens(prompt, sampling, spec, cancel)
            else:
                events = self._engine.chat(messages=messages, sampling=sampling, spec=spec,
                                           cancel=cancel)
            for ev in events:
                if isinstance(ev, TokenEvent):
                    batch.tokens.append(ev)
                elif isinstance(ev, StepEvent):
                    s = ev.stats
                    batch.steps.append(StepPoint(s.tokens, s.total_s, s.ttft_s, s.drafted,
                                                 s.accepted))
                    batch.stats = s  # a snapshot: the engine never changes it
                    now = time.monotonic()
                    if now - last >= BATCH_S:
                        self.batch_ready.emit(request_id, batch)
                        batch, last = ReplyBatch(), now
                elif isinstance(ev, Done):
                    if batch.tokens or batch.steps:
                        self.batch_ready.emit(request_id, batch)
                    self.reply_finished.emit(request_id, ev)
                    return
        except Exception as exc:
            log.error("generation failed\n%s", traceback.format_exc())
            self.reply_failed.emit(request_id, f"Generation failed: {exc}")
            return
        finally:
            # An unfinished reply is closed here, on the engine thread: left to the
            # garbage collector, its clean-up would run on the GUI thread (gui_thread_gc)
            # while this thread goes on with the same contexts.
            close = getattr(events, "close", None)
            if close is not None:
                close()
        self.reply_failed.emit(request_id, "The engine ended the reply without a result.")

    @Slot()
    def shutdown(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            except Exception:
                log.exception("engine close failed")
            self._engine = None
        thread = QThread.currentThread()
        if thread is not None:
            thread.quit()


class ReplyHandle(QObject):
    """One reply in flight; signals arrive on the GUI thread."""

    batch_arrived = Signal(object)
    """A ReplyBatch arrived."""
    finished = Signal(object)
    """The reply ended (Done; stop_reason CANCELLED keeps the partial text)."""
    failed = Signal(str)
    """The reply failed; a human message."""

    def __init__(self, request_id: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.request_id = request_id
        self.cancel_event = threading.Event()
        self.done = False

    def stop(self) -> None:
        self.cancel_event.set()
