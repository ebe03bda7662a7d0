"""Right side of the chat page: generation and speculative settings for the next reply.

Starts from the values the chat was left with (``ChatSession``), else from the
defaults (Settings page); every change is remembered for the next start, and
"Save as defaults" writes them to the settings.
"""

from __future__ import annotations

import copy

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from specula.core.chat_session import ChatSession
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.head_choice import HEAD_MODES
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.pairing.heads import head_label
from specula.core.settings import GenerationDefaults, SpeculativeDefaults
from specula.gui.context import AppContext

MODES = [
    (Mode.CHAIN, "Chain (draft model)"),
    (Mode.ADAPTIVE, "Adaptive chain (draft model)"),
    (Mode.TREE, "Token tree (draft model)"),
    (Mode.LOOKUP, "Prompt lookup (no draft model)"),
    (Mode.MTP, "MTP (the target's own layers)"),
    *((mode, head_label(mode.value)) for mode in HEAD_MODES),
]


def spin(lo: int, hi: int, value: int, tip: str = "") -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setValue(value)
    s.setToolTip(tip)
    return s


def dspin(lo: float, hi: float, step: float, value: float, tip: str = "") -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(2)
    s.setValue(value)
    s.setToolTip(tip)
    return s


class SpecForm(QWidget):
    """Mode, draft sizes, cut-off, tree budget and the lossy relaxed rule (shared with Settings)."""

    changed = Signal()
    """Any speculative field changed."""

    def __init__(self, spec: SpeculativeDefaults, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.mode = QComboBox()
        # Its longest label must not set the panel's width (the chat column needs it).
        self.mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(12)
        for mode, label in MODES:
            self.mode.addItem(label, mode.value)
        form.addRow("Mode", self.mode)
        self.draft_max = spin(1, 32, spec.draft_max, "Max draft size: tokens proposed per step "
                              "(a chain drafts this many; adaptive picks up to this many)")
        form.addRow("Max draft", self.draft_max)
        self.draft_min = spin(0, 32, spec.draft_min, "Min draft size: shorter drafts are discarded")
        form.addRow("Min draft", self.draft_min)
        self.p_min = dspin(0.0, 1.0, 0.05, spec.p_min,
                           "Drafting probability cut-off: stop drafting below this confidence")
        form.addRow("Cut-off p", self.p_min)
        self.tree_budget = spin(2, 60, spec.tree_budget, "Nodes in a token tree (tree mode)")
        form.addRow("Tree budget", self.tree_budget)
        lossy = QHBoxLayout()
        badge = QLabel("LOSSY")
        badge.setObjectName("LossyBadge")
        badge.setToolTip("Relaxed acceptance changes the output: it is no longer exactly "
                         "what the target alone would produce. 0 = off (exact).")
        lossy.addWidget(QLabel("Relaxed acceptance"))
        lossy.addWidget(badge)
        lossy.addStretch(1)
        form.addRow(lossy)
        self.relaxed_top_k = spin(0, 50, spec.relaxed_top_k,
                                  "LOSSY: accept a draft token inside the target's top-k (0 = off)")
        form.addRow("Top-k", self.relaxed_top_k)
        self.relaxed_ratio = dspin(0.0, 1.0, 0.05, spec.relaxed_ratio,
                                   "LOSSY: accept when p_target / p_draft exceeds this (0 = off)")
        form.addRow("Ratio", self.relaxed_ratio)
        self.set_values(spec)
        self.mode.currentIndexChanged.connect(self.changed)
        for w in (self.draft_max, self.draft_min, self.tree_budget, self.relaxed_top_k):
            w.valueChanged.connect(self.changed)
        for d in (self.p_min, self.relaxed_ratio):
            d.valueChanged.connect(self.changed)

    def set_values(self, spec: SpeculativeDefaults) -> None:
        i = self.mode.findData(spec.mode)
        self.mode.setCurrentIndex(max(i, 0))
        self.draft_max.setValue(spec.draft_max)
        self.draft_min.setValue(spec.draft_min)
        self.p_min.setValue(spec.p_min)
        self.tree_budget.setValue(spec.tree_budget)
        self.relaxed_top_k.setValue(spec.relaxed_top_k)
        self.relaxed_ratio.setValue(spec.relaxed_ratio)

    def values(self) -> SpeculativeDefaults:
        return SpeculativeDefaults(
            mode=str(self.mode.currentData()), draft_max=self.draft_max.value(),
            draft_min=self.draft_min.value(), p_min=self.p_min.value(),
            tree_budget=self.tree_budget.value(), relaxed_top_k=self.relaxed_top_k.value(),
            relaxed_ratio=self.relaxed_ratio.value(),
        )


class SettingsPanel(QWidget):
    changed = Signal()
    """A value for the next reply changed (it is already remembered)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.session = ChatSession.load()
        self._following_defaults = False  # set while the defaults are shown, not chosen
        gen = copy.deepcopy(self.session.generation or ctx.settings.generation)
        spec_values = copy.deepcopy(self.session.speculative or ctx.settings.speculative)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        box = QGroupBox("Generation")
        form = QFormLayout(box)
        self.system_prompt = QPlainTextEdit(gen.system_prompt)
        self.system_prompt.setFixedHeight(64)
        self.system_prompt.setToolTip("System prompt sent before the conversation")
        form.addRow(QLabel("System prompt"))
        form.addRow(self.system_prompt)
        self.temperature = dspin(0.0, 2.0, 0.1, gen.temperature, "0 = greedy (deterministic)")
        form.addRow("Temperature", self.temperature)
        self.top_k = spin(0, 1000, gen.top_k, "0 = off")
        form.addRow("Top-k", self.top_k)
        self.top_p = dspin(0.0, 1.0, 0.05, gen.top_p, "1 = off")
        form.addRow("Top-p", self.top_p)
        self.min_p = dspin(0.0, 1.0, 0.01, gen.min_p, "0 = off")
        form.addRow("Min-p", self.min_p)
        self.max_tokens = spin(1, 32768, gen.max_tokens, "Longest reply in tokens")
        form.addRow("Max tokens", self.max_tokens)
        self.seed = spin(-1, 2**31 - 1, gen.seed, "-1 = a new random seed each reply")
        form.addRow("Seed", self.seed)
        self.repeat_penalty = dspin(0.5, 2.0, 0.05, gen.repeat_penalty,
                                    "Repeat penalty over the last 64 tokens (1 = off)")
        form.addRow("Repeat penalty", self.repeat_penalty)
        lay.addWidget(box)
        spec_box = QGroupBox("Speculative decoding")
        spec_lay = QVBoxLayout(spec_box)
        self.spec = SpecForm(spec_values)
        spec_lay.addWidget(self.spec)
        lay.addWidget(spec_box)
        save = QPushButton("Save as defaults")
        save.setToolTip("Use these settings for new sessions (also on the Settings page)")
        save.clicked.connect(self.save_as_defaults)
        lay.addWidget(save)
        ctx.settings_changed.connect(self._defaults_changed)
        self.system_prompt.textChanged.connect(self._remember)
        for w in (self.top_k, self.max_tokens, self.seed):
            w.valueChanged.connect(self._remember)
        for d in (self.temperature, self.top_p, self.min_p, self.repeat_penalty):
            d.valueChanged.connect(self._remember)
        self.spec.changed.connect(self._remember)

    def _remember(self) -> None:
        """Keep the panel's values for the next start."""
        if self._following_defaults:
            return
        self.session.generation = self.generation()
        self.session.speculative = self.spec.values()
        try:
            self.session.save()
        except OSError:
            pass  # an unwritable config folder costs the memory, not the reply
        self.changed.emit()

    def generation(self) -> GenerationDefaults:
        return GenerationDefaults(
            system_prompt=self.system_prompt.toPlainText(), temperature=self.temperature.value(),
            top_k=self.top_k.value(), top_p=self.top_p.value(), min_p=self.min_p.value(),
            max_tokens=self.max_tokens.value(), seed=self.seed.value(),
            repeat_penalty=self.repeat_penalty.value(),
        )

    def sampling(self) -> SamplingParams:
        return self.generation().to_sampling()

    @property
    def lookup_mode(self) -> bool:
        return self.spec.values().mode == Mode.LOOKUP.value

    def spec_config(self, draft_on: bool) -> SpecConfig:
        """The SpecConfig for the next reply; plain when the draft switch is off."""
        return self.spec.values().to_spec(enabled=draft_on)

    def save_as_defaults(self) -> None:
        self.ctx.settings.generation = self.generation()
        self.ctx.settings.speculative = self.spec.values()
        self.ctx.save_settings()

    def _defaults_changed(self) -> None:
        """New defaults reach a panel only while it holds no values of its own: a chat's
        own choices (Chain, max draft 4) are never overwritten by a change on the Settings
        page (a theme switch saved the whole page and reset them)."""
        if self.session.speculative is not None or \
                self.spec.values() == self.ctx.settings.speculative:
            return
        self._following_defaults = True
        try:
            self.spec.set_values(self.ctx.settings.speculative)
        finally:
            self._following_defaults = False
        self.changed.emit()
