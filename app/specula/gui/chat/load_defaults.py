"""Per-model load defaults applied when the chat loads a target.

When a target starts loading, the engine options of that load are the
settings' with the model's own defaults on top
(:mod:`specula.core.library.load_defaults`: context length, GPU layers,
threads). ``EngineClient.load_target`` announces the load (``load_started``)
before it queues the request, and requests reach the engine thread in order,
so options sent from here apply to exactly this load. The draft to pair and
the mode are applied once the load call has returned: a draft request then
follows the target's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from specula.core.library.load_defaults import LoadDefaults, defaults_for
from specula.gui.context import AppContext


class LoadDefaultsHook(QObject):
    def __init__(self, ctx: AppContext, set_mode: Callable[[str], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._set_mode = set_mode
        self.n_ctx = ctx.settings.n_ctx
        """The context length the last target load asked for."""
        self.applied: LoadDefaults = LoadDefaults()
        """The defaults the last target load used (empty: none saved)."""
        ctx.engine.load_started.connect(self._on_load_started)

    def _on_load_started(self, kind: str, path: str) -> None:
        if kind != "target":
            return
        d = defaults_for(path)
        self.applied = d
        options = self.ctx.engine_options()
        if d.n_ctx is not None:
            options = replace(options, n_ctx=d.n_ctx)
        if d.gpu_layers is not None:
            options = replace(options, n_gpu_layers_target=d.gpu_layers)
        if d.threads is not None:
            options = replace(options, n_threads=d.threads)
        self.n_ctx = options.n_ctx
        self.ctx.engine.configure(options)
        if d.mode is not None or d.draft is not None:
            QTimer.singleShot(0, lambda: self._after_load_call(d))

    def _after_load_call(self, d: LoadDefaults) -> None:
        if d.mode is not None:
            self._set_mode(d.mode)
        if d.draft and Path(d.draft).is_file():
            self.ctx.load_requested.emit("draft", d.draft)
