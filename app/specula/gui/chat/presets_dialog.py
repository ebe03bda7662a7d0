"""Presets in the chat: a picker above the reply settings and a dialog to manage them.

Picking a preset writes its system prompt, sampling and draft settings into the
settings panel (what the next reply uses) and the chat remembers its name. The
dialog saves the panel's values under a name, deletes, imports and exports
JSON files (:mod:`specula.core.chat.presets` checks them).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.chat import presets
from specula.core.chat.presets import Preset, PresetError
from specula.gui.chat.settings_panel import SettingsPanel
from specula.gui.confirm import ask_yes_no
from specula.gui.errors import show_error
from specula.gui.tasks import Task, start_task

NAME_ROLE = Qt.ItemDataRole.UserRole + 7


def apply_preset(panel: SettingsPanel, preset: Preset) -> None:
    """Write the preset's values into the panel (fields it does not set are left alone)."""
    panel.system_prompt.setPlainText(preset.system_prompt)
    widgets = {"temperature": panel.temperature, "top_k": panel.top_k, "top_p": panel.top_p,
               "min_p": panel.min_p, "max_tokens": panel.max_tokens, "seed": panel.seed,
               "draft_max": panel.spec.draft_max, "draft_min": panel.spec.draft_min,
               "p_min": panel.spec.p_min}
    for key, value in preset.values.items():
        w = widgets.get(key)
        if w is not None:
            w.setValue(value)  # type: ignore[attr-defined]
    if preset.mode:
        i = panel.spec.mode.findData(preset.mode)
        if i >= 0:
            panel.spec.mode.setCurrentIndex(i)


def preset_from_panel(panel: SettingsPanel, name: str, speculation: str = "") -> Preset:
    gen, spec = panel.generation(), panel.spec.values()
    values: dict[str, float | int] = {
        "temperature": gen.temperature, "top_k": gen.top_k, "top_p": gen.top_p,
        "min_p": gen.min_p, "max_tokens": gen.max_tokens, "seed": gen.seed,
        "draft_max": spec.draft_max, "draft_min": spec.draft_min, "p_min": spec.p_min}
    return Preset(name, gen.system_prompt, spec.mode, values, speculation)


class PresetPicker(QWidget):
    """"Preset: [none ▾] [Manage…]" above the reply settings."""

    picked = Signal(object)
    """A preset was chosen (the Preset), or None for "no preset"."""

    def __init__(self, panel: SettingsPanel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Preset"))
        self.combo = QComboBox(self)
        self.combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(10)
        lay.addWidget(self.combo, 1)
        self.manage = QPushButton("Manage…", self)
        self.manage.setToolTip("Save the current settings as a preset, delete, import or export")
        self.manage.clicked.connect(self.open_dialog)
        lay.addWidget(self.manage)
        self.reload()
        self.combo.activated.connect(self._activated)

    def reload(self, current: str = "") -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("— none —", "")
        for p in presets.all_presets():
            self.combo.addItem(p.name, p.name)
            self.combo.setItemData(self.combo.count() - 1, p.speculation,
                                  Qt.ItemDataRole.ToolTipRole)
        self.set_current(current)
        self.combo.blockSignals(False)

    def set_current(self, name: str) -> None:
        i = self.combo.findData(name or "")
        self.combo.setCurrentIndex(max(i, 0))
        p = presets.find(name) if name else None
        self.combo.setToolTip(p.speculation if p else "No preset: the settings below as they are")

    def choose(self, name: str) -> None:
        """Apply the preset called ``name`` ("" = none) as if picked."""
        self.set_current(name)
        self._activated(self.combo.currentIndex())

    def _activated(self, index: int) -> None:
        name = str(self.combo.itemData(index) or "")
        p = presets.find(name) if name else None
        if p is not None:
            apply_preset(self.panel, p)
        self.set_current(name)
        self.picked.emit(p)

    def open_dialog(self) -> None:
        PresetsDialog(self.panel, self).exec()
        self.reload(str(self.combo.currentData() or ""))


def import_presets(path: Path) -> tuple[list[Preset], str]:
    """The presets imported from ``path`` (all saved in one write), or ``([], why)``; runs
    on a worker thread."""
    try:
        found = presets.import_json(path.read_text(encoding="utf-8"))
        presets.save_many(found)
    except (OSError, UnicodeDecodeError, PresetError) as exc:
        return [], f"{path.name}: {exc}"
    return found, ""


class PresetsDialog(QDialog):
    presets_imported = Signal(list)
    """An import ended: the presets it saved (none when it failed; a dialog said why)."""

    def __init__(self, panel: SettingsPanel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.confirm = ask_yes_no  # asked before a preset is deleted (tests answer it)
        self.setWindowTitle("Presets")
        self.resize(520, 380)
        lay = QVBoxLayout(self)
        self.list = QListWidget(self)
        self.list.currentItemChanged.connect(lambda *_a: self._describe())
        lay.addWidget(self.list, 1)
        self.about = QLabel("")
        self.about.setWordWrap(True)
        self.about.setObjectName("Muted")
        lay.addWidget(self.about)
        row = QHBoxLayout()
        for label, slot in (("Save current as…", self.save_current), ("Delete…", self.delete),
                            ("Import…", self.import_file), ("Export…", self.export_file)):
            b = QPushButton(label, self)
            b.clicked.connect(slot)
            row.addWidget(b)
        lay.addLayout(row)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        lay.addWidget(close)
        self.reload()

    def reload(self) -> None:
        self.list.clear()
        for p in presets.all_presets():
            item = QListWidgetItem(p.name + ("  (shipped)" if p.shipped else ""))
            item.setData(NAME_ROLE, p.name)
            self.list.addItem(item)
        self.list.setCurrentRow(0)

    def selected(self) -> Preset | None:
        item = self.list.currentItem()
        return presets.find(str(item.data(NAME_ROLE))) if item is not None else None

    def _describe(self) -> None:
        p = self.selected()
        self.about.setText(p.speculation if p and p.speculation else "")

    def save_current(self, name: str | None = None) -> None:
        if not name:
            name, ok = QInputDialog.getText(self, "Save preset", "Name")
            if not ok or not name.strip():
                return
        presets.save(preset_from_panel(self.panel, name.strip()))
        self.reload()

    def delete(self) -> None:
        p = self.selected()
        if p is not None and not p.shipped and self.confirm(
                self, "Delete preset", f"Delete the preset “{p.name}”?"):
            presets.delete(p.name)
            self.reload()

    def import_file(self, path: str | None = None) -> Task | None:
        """Read, check and save the file's presets on a worker thread (thousands of them
        are one read and one write, but still no work for the GUI thread);
        :attr:`presets_imported` says when they are in."""
        if not path:
            path, _f = QFileDialog.getOpenFileName(self, "Import presets", "",
                                                   "Presets (*.json);;All files (*)")
            if not path:
                return None
        name = Path(path).name
        return start_task(self, lambda _ctx: import_presets(Path(path)),
                          on_done=self._imported,
                          on_failed=lambda err: self._import_failed(name, err.message))

    def _imported(self, result: tuple[list[Preset], str]) -> None:
        found, problem = result
        if problem:
            show_error(self, "Specula: the presets cannot be imported", problem)
        else:
            self.reload()
        self.presets_imported.emit(found)

    def _import_failed(self, name: str, message: str) -> None:
        show_error(self, "Specula: the presets cannot be imported", f"{name}: {message}")
        self.presets_imported.emit([])

    def export_file(self, path: str | None = None) -> None:
        p = self.selected()
        if p is None:
            return
        if not path:
            path, _f = QFileDialog.getSaveFileName(self, "Export preset", f"{p.name}.json",
                                                   "Presets (*.json)")
            if not path:
                return
        try:
            Path(path).write_text(presets.export_json(p), encoding="utf-8")
        except OSError as exc:
            show_error(self, "Specula: the preset cannot be exported", str(exc))
