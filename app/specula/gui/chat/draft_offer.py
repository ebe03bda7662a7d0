"""The chat's offer when no compatible draft is at hand: "Download X (491 MB) as a draft?"

The best hub draft for the chosen target is found in the background
(:func:`specula.core.pairing.drafts.hub_drafts`: family search, remote headers
checked); accepting starts the download in the shared downloads list and,
once it is done and verified, loads it as the draft.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from specula.core.gguf.model_info import read_model_info
from specula.core.hub.client import HubClient, split_target
from specula.core.pairing.drafts import hub_drafts
from specula.core.sizes import byte_size
from specula.gui.context import AppContext
from specula.gui.tasks import Task, TaskContext, TaskError, start_task


@dataclass(frozen=True)
class Offer:
    target: str  # the target path it was found for
    repo_id: str
    filename: str
    size: int | None
    title: str  # "Qwen2.5-Coder-0.5B-Instruct"

    @property
    def text(self) -> str:
        return f"No compatible draft in the library. Download {self.title} " \
               f"({byte_size(self.size)}) as a draft?"


def find_offer(ctx: TaskContext, target: str, repo_id: str | None) -> Offer | None:
    """The best hub draft for the GGUF at ``target`` (runs off the GUI thread)."""
    info = read_model_info(target)
    ctx.check()
    found = hub_drafts(info, repo_id, hub=HubClient())
    for cand in found.candidates:
        spec = split_target(cand.source)
        if spec is None:
            continue
        repo, name = spec
        title = repo.split("/")[1].removesuffix("-GGUF").removesuffix("-gguf")
        return Offer(target, repo, name, cand.size, title)
    return None


class DraftOffer(QFrame):
    offer_shown = Signal(object)
    """An offer is shown (Offer)."""
    draft_downloaded = Signal(str)
    """The offered draft finished downloading: its local path."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("DraftOffer")
        self.ctx = ctx
        self.offer: Offer | None = None
        self._task: Task | None = None
        self._waiting: tuple[str, str] | None = None  # the download we load when done
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 4, 10, 4)
        self.label = QLabel("", self)
        self.label.setWordWrap(True)
        lay.addWidget(self.label, 1)
        self.accept = QPushButton("Download", self)
        self.accept.setObjectName("Primary")
        self.accept.clicked.connect(self.download)
        lay.addWidget(self.accept)
        self.dismiss = QPushButton("Not now", self)
        self.dismiss.clicked.connect(self.withdraw)
        lay.addWidget(self.dismiss)
        self.hide()
        ctx.downloads.download_finished.connect(self._on_downloaded)
        ctx.downloads.download_failed.connect(self._on_download_failed)

    def look_for(self, target: str) -> None:
        """Search the hub for a draft for ``target`` and offer the best one."""
        self.withdraw()
        local = self.ctx.library.find(target)
        repo_id = local.repo_id if local is not None else None
        self._task = start_task(self, lambda c: find_offer(c, target, repo_id),
                                on_done=self._show, on_failed=self._failed)

    def withdraw(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.offer = None
        self.hide()

    def _show(self, offer: Offer | None) -> None:
        if offer is None or offer.target != self.ctx.settings.last_target:
            return
        self.offer = offer
        self.label.setText(offer.text)
        self.accept.setEnabled(True)
        self.accept.setText("Download")
        self.show()
        self.offer_shown.emit(offer)

    def _failed(self, error: TaskError) -> None:
        self.hide()  # no hub, no offer: the draft picker already says what is there

    def download(self) -> None:
        offer = self.offer
        if offer is None:
            return
        self._waiting = (offer.repo_id, offer.filename)
        self.ctx.downloads.start(offer.repo_id, offer.filename, offer.size)
        self.label.setText(f"Downloading {offer.title} ({byte_size(offer.size)}); it is loaded "
                           "as the draft when done. Progress: Downloads page.")
        self.accept.setEnabled(False)
        self.accept.setText("Downloading…")

    def _on_downloaded(self, repo_id: str, filename: str, path: str) -> None:
        if self._waiting != (repo_id, filename) or not Path(path).is_file():
            return
        self._waiting = None
        self.hide()
        self.offer = None
        self.draft_downloaded.emit(path)

    def _on_download_failed(self, repo_id: str, filename: str, message: str) -> None:
        if self._waiting != (repo_id, filename):
            return
        self._waiting = None
        self.label.setText(f"The draft download failed: {message}")
        self.accept.setEnabled(True)
        self.accept.setText("Retry")
