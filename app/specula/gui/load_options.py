"""Load options: the context length and GPU offload to load a model with, and whether it fits.

One widget for every place that loads models (the Settings page; the chat's
model bar can offer it next to the target picker), in the spirit of LM
Studio's load dialog: a context length chosen at load, a GPU-offload slider
that reads "N / M layers", and the fit estimate of
:mod:`specula.core.hardware.fit` for the chosen target + draft + context.

Usage::

    opts = LoadOptions(n_ctx=4096, target_layers=gpu_layers.AUTO,
                       draft_layers=gpu_layers.AUTO, target=info, draft=draft_info)
    opts.options_changed.connect(lambda choice: ...)  # a LoadChoice
    opts.set_models(new_target_info, new_draft_info)  # when other models are picked

The widget only shows and edits values; it loads nothing and saves nothing
(:class:`LoadOptionsDialog` wraps it in a dialog whose OK saves the choice).
Free GPU memory is read once per :meth:`set_models` (or passed in), never per
slider step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from specula.core import gpu_layers
from specula.core.gguf.model_info import ModelInfo
from specula.core.hardware import fit, offload
from specula.core.hardware.system import GGMLDevice, list_devices, plan_offload
from specula.core.library.load_defaults import defaults_for, save_defaults
from specula.core.settings import Settings
from specula.core.sizes import byte_size
from specula.gui.context import AppContext
from specula.gui.dialog_buttons import accept_cancel

UNKNOWN_LAYERS = 128  # the slider's range before a model's layer count is known


@dataclass(frozen=True)
class LoadChoice:
    """What to load with: context tokens and n_gpu_layers (gpu_layers.AUTO, ALL or a count)."""

    n_ctx: int
    target_layers: int
    draft_layers: int


class LayerSpin(QSpinBox):
    """A layer count that reads "auto", "all" and "CPU only" for -2, -1 and 0."""

    def __init__(self, value: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setRange(gpu_layers.AUTO, 999)
        self.setValue(value)
        self.setToolTip("auto = what the free GPU memory holds at load time, all = every "
                        "layer, CPU only = none")

    def textFromValue(self, value: int) -> str:
        return gpu_layers.describe(value) if value <= 0 else str(value)

    def valueFromText(self, text: str) -> int:
        words = {"auto": gpu_layers.AUTO, "all": gpu_layers.ALL, "cpu only": 0}
        t = text.strip().lower()
        return words.get(t, int(t) if t.lstrip("-").isdigit() else self.value())

    def validate(self, text: str, pos: int) -> object:
        from PySide6.QtGui import QValidator

        t = text.strip().lower()
        if t in ("auto", "all", "cpu only") or t.lstrip("-").isdigit():
            return QValidator.State.Acceptable
        if any(w.startswith(t) for w in ("auto", "all", "cpu only")):
            return QValidator.State.Intermediate
        return QValidator.State.Invalid


class LoadOptions(QWidget):
    options_changed = Signal(object)
    """The user changed a value; the new :class:`LoadChoice`."""

    def __init__(self, n_ctx: int, target_layers: int, draft_layers: int,
                 target: ModelInfo | None = None, draft: ModelInfo | None = None,
                 devices: Sequence[GGMLDevice] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._target, self._draft = target, draft
        self._fixed_devices = list(devices) if devices is not None else None
        self._devices: list[GGMLDevice] = []
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self.setMaximumWidth(720)
        self.n_ctx = QSpinBox()
        self.n_ctx.setRange(256, 1_048_576)
        self.n_ctx.setSingleStep(1024)
        self.n_ctx.setSuffix(" tokens")
        self.n_ctx.setValue(n_ctx)
        self.n_ctx.setToolTip("The context window the models are loaded with: longer "
                              "conversations need more; each token costs KV-cache memory")
        form.addRow("Context length", self.n_ctx)
        row = QHBoxLayout()
        self.auto = QCheckBox("Auto")
        self.auto.setProperty("visibleBox", True)
        self.auto.setToolTip("Offload as many target layers as the free GPU memory holds")
        row.addWidget(self.auto)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setMinimumWidth(240)
        row.addWidget(self.slider, 1)
        self.layers_label = QLabel("")
        self.layers_label.setMinimumWidth(110)
        row.addWidget(self.layers_label)
        slider_row = QWidget()
        slider_row.setLayout(row)
        row.setContentsMargins(0, 0, 0, 0)
        form.addRow("GPU offload, target", slider_row)
        self.draft_layers = LayerSpin(draft_layers)
        form.addRow("GPU layers, draft", self.draft_layers)
        self.fit_label = QLabel("")
        self.fit_label.setObjectName("Muted")
        self.fit_label.setWordWrap(True)
        form.addRow(self.fit_label)
        self._set_target_layers(target_layers)
        self.set_models(target, draft)
        self.n_ctx.valueChanged.connect(self._changed)
        self.slider.valueChanged.connect(self._changed)
        self.auto.toggled.connect(self._changed)
        self.draft_layers.valueChanged.connect(self._changed)

    # -- public ------------------------------------------------------------------------
    def set_models(self, target: ModelInfo | None, draft: ModelInfo | None) -> None:
        """Show layers and fit for these models (None: not known yet); re-reads free VRAM."""
        choice = self.choice()
        self._target, self._draft = target, draft
        self._devices = self._fixed_devices if self._fixed_devices is not None else \
            list(list_devices())
        self.slider.blockSignals(True)
        self.slider.setRange(0, self.total_layers())
        self.slider.blockSignals(False)
        self._set_target_layers(choice.target_layers)
        self._show()

    def set_choice(self, choice: LoadChoice) -> None:
        """Show ``choice`` without emitting :attr:`options_changed`."""
        for w in (self.n_ctx, self.slider, self.auto, self.draft_layers):
            w.blockSignals(True)
        self.n_ctx.setValue(choice.n_ctx)
        self.draft_layers.setValue(choice.draft_layers)
        self._set_target_layers(choice.target_layers)
        for w in (self.n_ctx, self.slider, self.auto, self.draft_layers):
            w.blockSignals(False)
        self._show()

    def choice(self) -> LoadChoice:
        if self.auto.isChecked():
            target = gpu_layers.AUTO
        else:
            v = self.slider.value()
            target = gpu_layers.ALL if self._target and v >= self.total_layers() else v
        return LoadChoice(self.n_ctx.value(), target, self.draft_layers.value())

    def total_layers(self) -> int:
        """n_gpu_layers that offloads the whole target (its blocks and the output layer)."""
        return offload.total_layers(self._target) if self._target else UNKNOWN_LAYERS

    def planned_layers(self) -> int:
        """The target layers "auto" would offload now (0 without a GPU)."""
        if self._target is None:
            return 0
        draft = self._draft if self.draft_layers.value() != 0 else None
        return plan_offload(self._target, draft, self.n_ctx.value(), self._devices)[1]

    # -- internals ---------------------------------------------------------------------
    def _set_target_layers(self, value: int) -> None:
        self.auto.setChecked(value == gpu_layers.AUTO)
        if value == gpu_layers.ALL:
            value = self.total_layers()
        self.slider.setValue(max(value, 0))

    def _changed(self, *_args: object) -> None:
        self._show()
        self.options_changed.emit(self.choice())

    def _layers_shown(self) -> int:
        return self.planned_layers() if self.auto.isChecked() else self.slider.value()

    def _show(self) -> None:
        auto = self.auto.isChecked()
        self.slider.setEnabled(not auto)
        n = self._layers_shown()
        if self.auto.isChecked() and self._target is None:
            self.layers_label.setText("auto")
        elif self._target is None:
            self.layers_label.setText(f"{n} layers")
        else:
            self.layers_label.setText(f"{n} / {self.total_layers()} layers")
        self.fit_label.setText(self.fit_text())

    def fit_text(self) -> str:
        """The fit verdict for target + draft at this context, and where the layers go."""
        if self._target is None:
            return "Load a model to see how many layers it has and whether it fits."
        n_ctx = self.n_ctx.value()
        free = [d.memory_free for d in self._devices
                if d.is_gpu and not d.is_remote and d.memory_free > 0]
        est = fit.estimate(self._target, self._draft, n_ctx=n_ctx, gpu_free=free)
        lines = [est.message]
        if free:
            s = offload.split(self._target, n_ctx, self._layers_shown())
            lines.append(f"Target with {s.layers} / {s.total} layers on the GPU: "
                         f"{byte_size(s.vram)} in VRAM, {byte_size(s.ram)} in RAM.")
        else:
            lines.append("No GPU that this llama.cpp build can use: every layer runs on the CPU.")
        return "\n".join(lines)


def apply_choice(settings: Settings, choice: LoadChoice) -> None:
    """Write ``choice`` into the settings (the caller saves them)."""
    settings.n_ctx = choice.n_ctx
    settings.n_gpu_layers_target = choice.target_layers
    settings.n_gpu_layers_draft = choice.draft_layers


def initial_choice(settings: Settings, model_path: str = "", running_n_ctx: int = 0) -> LoadChoice:
    """What the chat's gear shows: for the loaded model, the context it runs with and its
    own GPU layers (else the global ones); with no model, the global defaults."""
    if not model_path:
        return LoadChoice(settings.n_ctx, settings.n_gpu_layers_target,
                          settings.n_gpu_layers_draft)
    d = defaults_for(model_path)
    layers = d.gpu_layers if d.gpu_layers is not None else settings.n_gpu_layers_target
    return LoadChoice(running_n_ctx or d.n_ctx or settings.n_ctx, layers,
                      settings.n_gpu_layers_draft)


def save_choice(settings: Settings, choice: LoadChoice, model_path: str = "") -> None:
    """The user's choice wins: for a loaded model its context and GPU layers become that
    model's own load defaults (LM Studio keeps load settings per model), which the next
    load applies over the global ones; the draft's layers, and everything when no model is
    loaded, go to the global settings. The caller saves the settings."""
    if not model_path:
        apply_choice(settings, choice)
        return
    d = defaults_for(model_path)
    save_defaults(model_path, replace(d, n_ctx=choice.n_ctx, gpu_layers=choice.target_layers))
    settings.n_gpu_layers_draft = choice.draft_layers


class LoadOptionsDialog(QDialog):
    """:class:`LoadOptions` in a dialog, for a gear button next to a model picker.

    ``LoadOptionsDialog(ctx, target_info, draft_info, parent, model_path).exec()`` shows
    the options ``model_path`` (the loaded target) runs with, and OK saves them as its
    own; without ``model_path`` it shows and saves the global defaults (they apply at the
    next load).
    """

    def __init__(self, ctx: AppContext, target: ModelInfo | None = None,
                 draft: ModelInfo | None = None, parent: QWidget | None = None,
                 model_path: str = "") -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.model_path = model_path
        self.setWindowTitle("Load options")
        c = initial_choice(ctx.settings, model_path, ctx.engine.n_ctx if model_path else 0)
        lay = QVBoxLayout(self)
        self.options = LoadOptions(c.n_ctx, c.target_layers, c.draft_layers,
                                   target, draft, parent=self)
        lay.addWidget(self.options)
        note = QLabel(f"Saved as {Path(model_path).name}'s own load settings; it is loaded "
                      "again with them." if model_path else
                      "They apply when a model is next loaded.")
        note.setObjectName("Muted")
        note.setWordWrap(True)
        lay.addWidget(note)
        lay.addWidget(accept_cancel(self))

    def accept(self) -> None:
        save_choice(self.ctx.settings, self.options.choice(), self.model_path)
        self.ctx.save_settings()
        super().accept()
