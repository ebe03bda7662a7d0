"""The settings a comparison runs with, shown on the page.

By default they follow the chat panel (what the user is chatting with now);
unticking "Same as Chat" makes temperature, seed, max tokens and the mode the
page's own. Every value a run uses is visible, so a comparison can be read
and repeated. Whether it follows the chat, and its own mode, are kept in the
settings across restarts; the modes offered are the ones the loaded target
can run (MTP only for a target with MTP layers, a head's mode only with that head loaded).
"""

from __future__ import annotations

import copy

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from specula.core.engine.config import Mode
from specula.core.engine.policy.head_choice import HEAD_MODES
from specula.core.settings import GenerationDefaults, SpeculativeDefaults
from specula.gui.chat.settings_panel import MODES, dspin, spin
from specula.gui.context import AppContext


def chat_values(widget: QWidget) -> tuple[GenerationDefaults, SpeculativeDefaults] | None:
    """The chat panel's current values, found in ``widget``'s window (None when absent)."""
    from specula.gui.chat.settings_panel import SettingsPanel

    panel = widget.window().findChild(SettingsPanel)
    if panel is None:
        return None
    return panel.generation(), panel.spec.values()


def runnable_modes(mtp_layers: int, head: str = "") -> list[tuple[Mode, str]]:
    """The modes a comparison can run on a target with ``mtp_layers`` MTP layers and the
    draft ``head`` of that kind loaded ("": none). The draft modes run plain without a
    draft, and the page says so; MTP needs the target's layers, a head's mode its head."""
    return [(mode, label) for mode, label in MODES
            if (mode is not Mode.MTP or mtp_layers > 0)
            and (mode not in HEAD_MODES or mode.value == head)]


class CompareOptions(QWidget):
    changed = Signal()
    """A value the next comparison uses changed."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._gen = copy.deepcopy(ctx.settings.generation)
        self._spec = copy.deepcopy(ctx.settings.speculative)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.linked = QCheckBox("Same as Chat")
        self.linked.setChecked(ctx.settings.compare_linked)
        if ctx.settings.compare_mode:
            self._spec.mode = ctx.settings.compare_mode
        self.linked.setProperty("visibleBox", True)
        self.linked.setToolTip("Use the chat panel's current settings; untick to set them here")
        row.addWidget(self.linked)
        self.temperature = dspin(0.0, 2.0, 0.1, self._gen.temperature, "0 = greedy")
        self.seed = spin(-1, 2**31 - 1, self._gen.seed,
                         "-1 = one new random seed, shared by every run of the comparison")
        self.max_tokens = spin(1, 32768, self._gen.max_tokens, "Longest reply in tokens")
        self.mode = QComboBox()
        self._offer_loaded()
        self.rounds = spin(1, 20, 2, "Each round runs plain and speculative once; rounds "
                                     "alternate the order (plain, spec, spec, plain, ...) so "
                                     "the machine's drift weighs both sides alike")
        self.seed.setMaximumWidth(110)
        self.mode.setMaximumWidth(230)
        second = QHBoxLayout()  # two rows, so the page fits a 1024 px window
        for target, label, w in ((row, "Temperature", self.temperature), (row, "Seed", self.seed),
                                 (row, "Max tokens", self.max_tokens),
                                 (second, "Mode", self.mode), (second, "Rounds", self.rounds)):
            target.addWidget(QLabel(label))
            target.addWidget(w)
        row.addStretch(1)
        outer.addLayout(row)
        self.details = QLabel("")
        self.details.setObjectName("Muted")
        self.details.setWordWrap(True)
        second.addWidget(self.details, 1)
        outer.addLayout(second)
        self.linked.toggled.connect(self.refresh)
        self.linked.toggled.connect(self._remember)
        self.mode.currentIndexChanged.connect(self._remember)
        for loaded in (ctx.engine.target_loaded, ctx.engine.head_loaded):
            loaded.connect(self._offer_loaded)
        for gone in (ctx.engine.target_unloaded, ctx.engine.head_unloaded):
            gone.connect(self._offer_loaded)
        for sig in (self.temperature.valueChanged, self.seed.valueChanged,
                    self.max_tokens.valueChanged, self.mode.currentIndexChanged):
            sig.connect(self._edited)
        self.rounds.valueChanged.connect(self.changed)
        self.refresh()

    def _offer_loaded(self, *_args: object) -> None:
        e = self.ctx.engine
        self.set_modes(e.mtp_layers if e.has_target else 0,
                       e.head_info.kind if e.head_info is not None else "")

    def set_modes(self, mtp_layers: int, head: str = "") -> None:
        """Offer the modes the loaded target (and head) can run; the chosen one stays when offered."""
        want = str(self.mode.currentData() or self._spec.mode)
        self.mode.blockSignals(True)
        self.mode.clear()
        for mode, label in runnable_modes(mtp_layers, head):
            self.mode.addItem(label, mode.value)
        self.mode.setCurrentIndex(max(self.mode.findData(want), 0))
        self.mode.blockSignals(False)

    def _remember(self, *_args: object) -> None:
        """Keep "Same as Chat" and the page's own mode for the next start."""
        s = self.ctx.settings
        linked, mode = self.linked.isChecked(), "" if self.linked.isChecked() else \
            str(self.mode.currentData() or "")
        if (s.compare_linked, s.compare_mode) != (linked, mode):
            s.compare_linked, s.compare_mode = linked, mode
            try:
                s.save()
            except OSError:
                pass  # an unwritable config folder costs the memory, not the comparison

    def refresh(self, *_args: object) -> None:
        """Re-read the chat panel (when linked) and show the values a run will use."""
        linked = self.linked.isChecked()
        if linked:
            found = chat_values(self) if self.window() is not self else None
            gen, spec = found or (copy.deepcopy(self.ctx.settings.generation),
                                  copy.deepcopy(self.ctx.settings.speculative))
            self._gen, self._spec = gen, spec
            widgets = (self.temperature, self.seed, self.max_tokens, self.mode)
            for w in widgets:
                w.blockSignals(True)
            self.temperature.setValue(gen.temperature)
            self.seed.setValue(gen.seed)
            self.max_tokens.setValue(gen.max_tokens)
            self.mode.setCurrentIndex(max(self.mode.findData(spec.mode), 0))
            for w in widgets:
                w.blockSignals(False)
        for w in (self.temperature, self.seed, self.max_tokens, self.mode):
            w.setEnabled(not linked)
        self._show_details()
        self.changed.emit()

    def _edited(self, *_args: object) -> None:
        self._show_details()
        self.changed.emit()

    def _show_details(self) -> None:
        g, s = self.generation(), self.speculative()
        source = "the chat panel" if self.linked.isChecked() else "this page"
        self.details.setText(
            f"From {source}: top-k {g.top_k}, top-p {g.top_p:g}, min-p {g.min_p:g}; "
            f"max draft {s.draft_max}, min draft {s.draft_min}, cut-off p {s.p_min:g}"
            + (f", tree budget {s.tree_budget}" if s.mode == "tree" else ""))

    def generation(self) -> GenerationDefaults:
        g = copy.deepcopy(self._gen)
        g.temperature, g.seed = self.temperature.value(), self.seed.value()
        g.max_tokens = self.max_tokens.value()
        return g

    def speculative(self) -> SpeculativeDefaults:
        s = copy.deepcopy(self._spec)
        s.mode = str(self.mode.currentData())
        return s
