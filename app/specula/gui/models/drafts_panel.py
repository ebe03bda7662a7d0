"""'Drafts for this model': recommended drafts, local ones first, hub ones with one-click download.

The candidates come from :mod:`specula.core.pairing.drafts` (library drafts checked
on their full headers, hub siblings verified by their remote headers), worked
out in the background; choosing another model cancels the older result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import HubClient, split_target
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import human_size
from specula.core.pairing.drafts import DraftCandidate, HubDrafts, hub_drafts, library_drafts
from specula.gui.tasks import Task, TaskContext, TaskError, start_task


@dataclass
class Recommendation:
    local: list[DraftCandidate] = field(default_factory=list)
    hub: list[DraftCandidate] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    hub_error: str = ""


def recommend(ctx: TaskContext, target: ModelInfo, repo_id: str | None,
              library: list[LocalModel], target_path: Path | None = None) -> Recommendation:
    """Local drafts, then hub drafts (a failed hub search leaves the local ones standing)."""
    out = Recommendation(library_drafts(target, library, target_path))
    ctx.check()
    ctx.emit(out)
    try:
        found: HubDrafts = hub_drafts(target, repo_id, hub=HubClient())
    except Exception as exc:
        out.hub_error = str(exc)
        return out
    out.hub, out.skipped = found.candidates, found.skipped
    return out


def candidate_label(c: DraftCandidate) -> str:
    name = c.info.display_name
    where = "in library" if c.location == "library" else "on the hub"
    return f"{name} · {c.info.quantization or '?'} · {human_size(c.size)} · {where}"


class DraftsPanel(QFrame):
    download_requested = Signal(str, str, int)
    """The user clicked Download on a hub draft: repo id, file name, size in bytes (0: unknown)."""
    recommendations_ready = Signal(object)
    """All candidates are known (a Recommendation)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SidePanel")
        self._task: Task | None = None
        self.result: Recommendation | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        caption = QLabel("DRAFTS FOR THIS MODEL", self)
        caption.setObjectName("PanelTitle")
        lay.addWidget(caption)
        self.status = QLabel("Select a file to see which drafts suit it.", self)
        self.status.setObjectName("Muted")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.list = QListWidget(self)
        self.list.setObjectName("DraftList")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        lay.addWidget(self.list, 1)
        self.buttons: dict[str, QPushButton] = {}  # "repo/file" -> its Download button

    def clear(self, text: str = "") -> None:
        if self._task is not None:
            self._task.cancel()
        self.list.clear()
        self.buttons.clear()
        self.result = None
        self.status.setText(text)

    def show_for(self, target: ModelInfo, repo_id: str | None, library: list[LocalModel]) -> None:
        self.clear(f"Looking for drafts for {target.display_name} (library, then hub)…")
        self._task = start_task(self, lambda ctx: recommend(ctx, target, repo_id, library),
                                on_item=self._fill, on_done=self._done, on_failed=self._failed)

    def _done(self, result: Recommendation) -> None:
        self._fill(result)
        self.recommendations_ready.emit(result)

    def _fill(self, result: Recommendation) -> None:
        self.result = result
        self.list.clear()
        self.buttons.clear()
        for c in result.local + result.hub:
            self._add(c)
        n_local, n_hub = len(result.local), len(result.hub)
        text = f"{n_local} in the library, {n_hub} on the hub"
        if result.hub_error:
            text += f". The hub could not be searched: {result.hub_error}"
        elif not (n_local or n_hub):
            text = "No compatible draft found in the library or on the hub."
        self.status.setText(text)

    def _add(self, c: DraftCandidate) -> None:
        item = QListWidgetItem(self.list)
        row = QWidget(self.list)
        lay = QHBoxLayout(row)
        lay.setContentsMargins(6, 2, 6, 2)
        text = QLabel(candidate_label(c), row)
        text.setToolTip(f"{c.source}\n{', '.join(c.reasons)}\n{c.report.reason()}")
        lay.addWidget(text, 1)
        if c.location == "hub":
            target = split_target(c.source)
            if target is not None:
                button = QPushButton("Download", row)
                button.setObjectName("Primary")
                repo, name = target
                button.clicked.connect(
                    lambda _=False, r=repo, n=name, s=c.size or 0: self.download_requested.emit(r, n, s))
                lay.addWidget(button)
                self.buttons[c.source] = button
        hint = row.sizeHint()
        hint.setHeight(hint.height() + 14)  # the list's item padding
        item.setSizeHint(hint)
        item.setData(Qt.ItemDataRole.UserRole, c.source)
        self.list.setItemWidget(item, row)

    def _failed(self, error: TaskError) -> None:
        self.status.setText(f"Could not look for drafts: {error.message}")
