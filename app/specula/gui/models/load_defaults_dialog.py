"""My Models' gear: a model's own load defaults (context, GPU layers, threads, draft, mode).

Saved with :func:`specula.core.library.load_defaults.save_defaults`; the chat
applies them when it loads the model (``gui/chat/load_defaults.py``), and
``specula chat`` / ``specula serve`` use them for every option not given on
the command line. "Global" leaves a field to the Settings page (or the
command's own default).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from specula.core.gguf.model_info import read_model_info
from specula.core.library.load_defaults import MODES, LoadDefaults, defaults_for, save_defaults
from specula.core.library.scan import LocalModel
from specula.core.pairing.pair_status import PairStatus, library_statuses
from specula.gui.dialog_buttons import Button, accept_cancel
from specula.gui.tasks import TaskContext, start_task

GLOBAL = "Global (Settings)"


def _spin(lo: int, hi: int, value: int | None, special: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setSpecialValueText(special)  # shown at the minimum: "no default of its own"
    s.setValue(lo if value is None else value)
    return s


class LoadDefaultsDialog(QDialog):
    drafts_judged = Signal()
    """Each "Draft to pair" entry was marked as the chat's picker marks it."""

    def __init__(self, model: LocalModel, library: list[LocalModel],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setWindowTitle(f"Load defaults: {model.path.name}")
        d = defaults_for(model.path)
        lay = QVBoxLayout(self)
        note = QLabel("How this model loads unless you say otherwise: in the chat, with "
                      "`specula chat --model` and `specula serve`.")
        note.setWordWrap(True)
        note.setObjectName("Muted")
        lay.addWidget(note)
        form = QFormLayout()
        self.n_ctx = _spin(127, 1 << 20, d.n_ctx, GLOBAL)
        self.n_ctx.setSingleStep(1024)
        form.addRow("Context length", self.n_ctx)
        # -3: global; -2: auto; -1: all; else a count
        self.gpu_layers = _spin(-3, 999, d.gpu_layers, GLOBAL)
        self.gpu_layers.setToolTip("-2 = auto (what the free VRAM holds), -1 = all, 0 = CPU only")
        form.addRow("GPU layers", self.gpu_layers)
        self.threads = _spin(0, 1024, d.threads, GLOBAL)
        form.addRow("Threads", self.threads)
        self.draft = QComboBox()
        self.draft.addItem(GLOBAL, None)
        self.draft.addItem("No draft", "")
        files = [m for m in library if m.path != model.path and m.complete]
        for m in files:
            self.draft.addItem(m.path.name, str(m.path))
        if d.draft is not None and self.draft.findData(d.draft) < 0:
            self.draft.addItem(d.draft, d.draft)
        self.draft.setCurrentIndex(max(0, self.draft.findData(d.draft)))
        form.addRow("Draft to pair", self.draft)
        self.mode = QComboBox()
        self.mode.addItem(GLOBAL, None)
        for m in MODES:
            self.mode.addItem(m, m)
        self.mode.setCurrentIndex(max(0, self.mode.findData(d.mode)))
        form.addRow("Mode", self.mode)
        lay.addLayout(form)
        lay.addWidget(accept_cancel(self, Button.Save))
        if model.info is not None and model.complete:
            def work(task: TaskContext) -> dict[str, PairStatus]:
                me = read_model_info(model.path)
                return library_statuses(me, model.name, files, task.cancel_event)

            start_task(self, work, on_done=self._mark_drafts)

    def _mark_drafts(self, statuses: dict[str, PairStatus]) -> None:
        """Mark each draft as the chat's picker does: incompatible (why), larger than the
        target, each disabled; the ones that suit stay as they are."""
        items = self.draft.model()
        assert isinstance(items, QStandardItemModel)
        for row in range(self.draft.count()):
            status = statuses.get(str(self.draft.itemData(row) or ""))
            if status is None:
                continue
            self.draft.setItemData(row, status.detail, Qt.ItemDataRole.ToolTipRole)
            if not status.usable:
                self.draft.setItemText(row, self.draft.itemText(row) + status.suffix)
                item = items.item(row)
                if item is not None:
                    item.setEnabled(False)
        self.drafts_judged.emit()

    def values(self) -> LoadDefaults:
        def opt(spin: QSpinBox) -> int | None:
            return None if spin.value() == spin.minimum() else spin.value()

        return LoadDefaults(n_ctx=opt(self.n_ctx), gpu_layers=opt(self.gpu_layers),
                            threads=opt(self.threads), draft=self.draft.currentData(),
                            mode=self.mode.currentData())

    def accept(self) -> None:
        save_defaults(self.model.path, self.values())
        super().accept()
