"""'Drafts for this model': the drafts that suit it, library copies first, hub ones downloadable.

The candidates come from :mod:`specula.core.pairing.drafts` (the one pairing
decision: library drafts checked on their full headers, hub siblings verified
by their remote headers, the same file listed once), worked out in the
background; choosing another model cancels the older result. A library draft
offers Load (disabled, with the reason, when it cannot draft for the loaded
target); a hub draft already downloaded says so and offers Load, not Download.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QPushButton,
    QWidget,
)

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import HubClient, split_target
from specula.core.library.scan import LocalModel
from specula.core.pairing.drafts import (
    DraftCandidate,
    HubDrafts,
    hub_drafts,
    judge,
    library_drafts,
    merge_hub,
)
from specula.core.sizes import byte_size
from specula.gui.elided import ElidedLabel
from specula.gui.models.widgets import SidePane
from specula.gui.tasks import Task, TaskContext, TaskError, start_task


@dataclass
class Recommendation:
    local: list[DraftCandidate] = field(default_factory=list)
    hub: list[DraftCandidate] = field(default_factory=list)  # not in the library
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
    except Exception as exc:  # any hub failure: the library half still stands
        out.hub_error = str(exc)
        return out
    out.hub, out.skipped = merge_hub(out.local, found.candidates), found.skipped
    return out


def candidate_label(c: DraftCandidate) -> str:
    where = "on the hub" if c.location == "hub" else "downloaded" if c.hub_source else "in library"
    return f"{c.info.display_name} · {c.info.quantization or '?'} · {byte_size(c.size)} · {where}"


def load_refusal(c: DraftCandidate, loaded: ModelInfo | None) -> str:
    """Why ``c`` cannot be loaded as the draft now ("" when it can)."""
    if loaded is None:
        return "Load a target first (on the chat page or My Models)."
    verdict = judge(loaded, Path(loaded.source).name, c.info, c.name, c.source, c.location, c.size)
    if not verdict.report.usable:
        return f"Cannot draft for {loaded.display_name}: {verdict.report.reason()}"
    if not verdict.suits:
        return f"Not smaller than {loaded.display_name}: drafting with it gains nothing."
    return ""


class DraftsPanel(SidePane):
    download_requested = Signal(str, str, int)
    """The user clicked Download on a hub draft: repo id, file name, size in bytes (0: unknown)."""
    load_requested = Signal(str)
    """The user clicked Load on a library draft: its path (to load as the draft)."""
    recommendations_ready = Signal(object)
    """All candidates are known (a Recommendation)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("DRAFTS FOR THIS MODEL", "Select a file to see which drafts suit it.",
                         "DraftList", parent)
        self._task: Task | None = None
        self.result: Recommendation | None = None
        self.loaded: ModelInfo | None = None  # the loaded target Load is judged against
        self.buttons: dict[str, QPushButton] = {}  # source -> its Download or Load button

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

    def set_loaded(self, loaded: ModelInfo | None) -> None:
        """The loaded target changed: Load buttons are judged against it again."""
        self.loaded = loaded
        if self.result is not None:
            self._fill(self.result)

    def _done(self, result: Recommendation) -> None:
        self._fill(result)
        self.recommendations_ready.emit(result)

    def _fill(self, result: Recommendation) -> None:
        self.result = result
        self.list.clear()
        self.buttons.clear()
        for c in result.local + result.hub:
            self._add(c)
        self.show_rows()
        n_local, n_hub = len(result.local), len(result.hub)
        text = f"{n_local} in the library, {n_hub} more on the hub"
        if result.hub_error:
            text += f". The hub could not be searched: {result.hub_error}"
        elif not (n_local or n_hub):
            text = "No compatible draft found in the library or on the hub."
        self.status.setText(text)

    def _add(self, c: DraftCandidate) -> None:
        row, lay = self.add_row(c.source)
        text = ElidedLabel(candidate_label(c), row)
        text.setToolTip(f"{c.source}\n{', '.join(c.reasons)}\n{c.report.reason()}")
        lay.addWidget(text, 1)
        button: QPushButton | None = None
        if c.location == "hub":
            target = split_target(c.source)
            if target is not None:
                button = QPushButton("Download", row)
                button.setObjectName("Primary")
                repo, name = target
                button.clicked.connect(
                    lambda _=False, r=repo, n=name, s=c.size or 0: self.download_requested.emit(r, n, s))
        else:
            button = QPushButton("Load", row)
            refusal = load_refusal(c, self.loaded)
            button.setEnabled(not refusal)
            button.setToolTip(refusal or f"Load {c.name} as the draft")
            button.clicked.connect(lambda _=False, p=c.source: self.load_requested.emit(p))
        if button is not None:
            lay.addWidget(button)
            self.buttons[c.source] = button

    def _failed(self, error: TaskError) -> None:
        self.status.setText(f"Could not look for drafts: {error.message}")
