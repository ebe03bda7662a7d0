"""Discover's 'Draft heads for the loaded target': EAGLE-3, DFlash and DSpark heads on the hub.

The search and the fit are :func:`specula.core.pairing.heads.hub_heads` (the target's
name searched, head repositories kept, every file's remote header read and checked
with ``head_misfits``), run in the background when the user asks. A fitting head
offers Download; once downloaded it is in the library and the chat's draft picker
offers it. A head that does not fit is listed with why, without a button.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QPushButton, QWidget

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import HubClient, split_target
from specula.core.pairing.heads import HeadChoice, HubHeads, hub_heads
from specula.core.sizes import byte_size
from specula.gui.elided import ElidedLabel
from specula.gui.models.widgets import SidePane
from specula.gui.tasks import Task, TaskError, start_task

NO_TARGET = "Load a target to look for its EAGLE-3, DFlash and DSpark heads on the hub."


def head_text(c: HeadChoice) -> str:
    """One row: "EAGLE-3 head · owner/repo/file · 300 kB", or why it does not fit."""
    text = f"{c.label} · {c.source} · {byte_size(c.size)}"
    return text if c.usable else f"{text} — does not fit: {c.reason}"


class HeadsPanel(SidePane):
    download_requested = Signal(str, str, int)
    """Download a fitting head: repo id, file name, size in bytes (0: unknown)."""
    heads_found = Signal(object)
    """A search ended (a HubHeads)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("DRAFT HEADS FOR THE LOADED TARGET", NO_TARGET, "HeadList", parent)
        self.find_button = QPushButton("Find heads", self)
        self.find_button.setEnabled(False)
        self.find_button.clicked.connect(self.find)
        self.layout().insertWidget(2, self.find_button)
        self.target: ModelInfo | None = None
        self.target_repo: str | None = None
        self.result: HubHeads | None = None
        self.buttons: dict[str, QPushButton] = {}
        self._task: Task | None = None

    def set_target(self, target: ModelInfo | None, repo_id: str | None = None) -> None:
        """The loaded target changed (None: none): earlier results no longer apply."""
        if self._task is not None:
            self._task.cancel()
        self.target, self.target_repo, self.result = target, repo_id, None
        self.list.clear()
        self.buttons.clear()
        self.find_button.setEnabled(target is not None)
        self.status.setText(NO_TARGET if target is None else
                            f"Search the hub for heads made for {target.display_name}.")

    def find(self) -> None:
        target, repo = self.target, self.target_repo
        if target is None:
            return
        if self._task is not None:
            self._task.cancel()
        self.list.clear()
        self.buttons.clear()
        self.status.setText(f"Looking for heads for {target.display_name} on the hub…")
        self._task = start_task(self, lambda ctx: hub_heads(target, repo, hub=HubClient(),
                                                            cancel=ctx.cancel_event),
                                on_done=self._fill, on_failed=self._failed)

    def _fill(self, result: HubHeads) -> None:
        self.result = result
        for c in result.fitting + result.misfitting:
            row, lay = self.add_row(c.source)
            label = ElidedLabel(head_text(c), row)
            label.setToolTip(f"{c.source}\n{c.description or c.reason}")
            lay.addWidget(label, 1)
            where = split_target(c.source)
            if c.usable and where is not None:
                button = QPushButton("Download", row)
                button.setObjectName("Primary")
                repo, name = where
                button.clicked.connect(
                    lambda _=False, r=repo, n=name, s=c.size or 0: self.download_requested.emit(r, n, s))
                lay.addWidget(button)
                self.buttons[c.source] = button
        self.show_rows()
        n, m = len(result.fitting), len(result.misfitting)
        self.status.setText(f"{n} fitting head{'s' if n != 1 else ''} on the hub"
                            + (f", {m} for other targets" if m else "")
                            + f" (searched \u201c{result.query}\u201d)")
        self.heads_found.emit(result)

    def _failed(self, error: TaskError) -> None:
        self.status.setText(f"Could not look for heads: {error.message}")
