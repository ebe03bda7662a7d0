"""Discover's first view: suggested pairs, each loadable or downloadable in one click.

The pairs come from :mod:`specula.core.pairing.suggestions` (library pairs as
soon as they are known, then popular hub pairs), worked out in the
background the first time the page is shown and again when the library or
the loaded target changes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.cancel import Cancelled
from specula.core.gguf.model_info import ModelInfo, quantization_from_name
from specula.core.hub.client import HubClient
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import plural
from specula.core.pairing.suggestions import (
    End,
    SuggestedPair,
    Suggestions,
    hub_suggestions,
    library_suggestions,
)
from specula.core.sizes import byte_size
from specula.gui.elided import ElidedLabel
from specula.gui.models.widgets import SidePane
from specula.gui.tasks import Task, TaskContext, TaskError, start_task


def suggest(ctx: TaskContext, library: list[LocalModel], loaded: ModelInfo | None,
            models_dir: Path) -> Suggestions:
    """Library pairs (sent at once), then the hub's (a failed hub leaves the library's)."""
    out = Suggestions(library_suggestions(library, loaded, cancel=ctx.cancel_event))
    ctx.check()
    ctx.emit(Suggestions(list(out.pairs)))
    try:
        out.add(hub_suggestions(HubClient(), models_dir, check=ctx.check, library=library))
    except Cancelled:
        raise
    except Exception as exc:  # the hub is a bonus here: say why, keep the library's pairs
        out.hub_error = str(exc)
    return out


def end_label(e: End) -> str:
    """A pair's side with its file's quantization: two pairs of the same models in other
    quantizations (Q4_K_M and F16) must not read alike."""
    quant = quantization_from_name(PurePosixPath(e.source).name)
    return f"{e.name} {quant}" if quant and quant.lower() not in e.name.lower() else e.name


def pair_label(p: SuggestedPair) -> str:
    return f"{end_label(p.target)} + {end_label(p.draft)}"


def pair_detail(p: SuggestedPair) -> str:
    size = byte_size((p.target.size or 0) + (p.draft.size or 0)) if p.target.size else "?"
    return f"{p.why} · {size} together"


def action_text(p: SuggestedPair) -> str:
    if p.ready:
        return "Load pair"
    if p.target.location == "library":
        return "Download draft"
    return "Download both" if p.draft.location == "hub" else "Download target"


class SuggestionsPanel(SidePane):
    load_requested = Signal(str, str)
    """Load this pair: target path, draft path."""
    download_requested = Signal(str, str, int)
    """Download one file of a pair: repo id, file name, size in bytes (0: unknown)."""
    suggestions_ready = Signal(object)
    """Every suggestion is known (Suggestions)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("SUGGESTED PAIRS",
                         "A target with the draft that suits it, ready in one click.",
                         "SuggestedPairs", parent)
        self._task: Task | None = None
        self.result: Suggestions | None = None
        self.buttons: list[QPushButton] = []

    def refresh(self, library: list[LocalModel], loaded: ModelInfo | None,
                models_dir: Path) -> None:
        if self._task is not None:
            self._task.cancel()
        self.status.setText("Looking for pairs in your library, then on the hub…")
        self._task = start_task(self, lambda ctx: suggest(ctx, library, loaded, models_dir),
                                on_item=self._fill, on_done=self._done, on_failed=self._failed)

    def _done(self, result: Suggestions) -> None:
        self._fill(result)
        self.suggestions_ready.emit(result)

    def _fill(self, result: Suggestions) -> None:
        self.result = result
        self.list.clear()
        self.buttons.clear()
        for p in result.pairs:
            self._add(p)
        self.show_rows()
        text = (plural(len(result.pairs), "pair") + " to try" if result.pairs else
                "No pair found yet: download a target and a small draft of the same family.")
        if result.hub_error:
            text += f". The hub could not be searched: {result.hub_error}"
        self.status.setText(text)

    def _add(self, p: SuggestedPair) -> None:
        row, lay = self.add_row(p)
        text = QVBoxLayout()
        text.setSpacing(0)
        label = ElidedLabel(pair_label(p), row)
        label.setToolTip(f"Target: {p.target.source}\nDraft: {p.draft.source}\n"
                         f"{', '.join(p.reasons)}")
        text.addWidget(label)
        detail = QLabel(pair_detail(p), row)  # a sentence: it wraps, it is never cut
        detail.setWordWrap(True)
        detail.setObjectName("Muted")
        text.addWidget(detail)
        lay.addLayout(text, 1)
        button = QPushButton(action_text(p), row)
        button.setObjectName("Primary")
        button.clicked.connect(lambda _=False, pair=p: self._act(pair))
        lay.addWidget(button)
        self.buttons.append(button)

    def _act(self, p: SuggestedPair) -> None:
        if p.ready:
            self.load_requested.emit(p.target.source, p.draft.source)
            return
        for end in (p.target, p.draft):
            where = end.repo_file
            if where is not None:
                self.download_requested.emit(where[0], where[1], end.size or 0)

    def _failed(self, error: TaskError) -> None:
        self.status.setText(f"Could not suggest pairs: {error.message}")
