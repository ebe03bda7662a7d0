"""One download as a row: title, state, progress, status line and its own buttons.

Every row carries Pause / Resume (Retry) / Cancel / Show in folder / Remove,
enabled by what the download is doing (:func:`row_actions`), so a running
download can be paused or cancelled where it is shown, without selecting it
first (the way browsers' and LM Studio's download lists work).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from specula.core.hub.download import DownloadState
from specula.core.pairing.badges import Tone
from specula.gui.downloads.model import DownloadItem
from specula.gui.models.badge_delegate import tone_colours

STATE_TONES = {DownloadState.DONE: Tone.GOOD, DownloadState.FAILED: Tone.BAD,
               DownloadState.CANCELLED: Tone.NEUTRAL, DownloadState.PAUSED: Tone.OK,
               DownloadState.VERIFYING: Tone.BUSY, DownloadState.RUNNING: Tone.BUSY,
               DownloadState.PENDING: Tone.NEUTRAL}
STATE_WORDS = {DownloadState.DONE: "done", DownloadState.FAILED: "failed",
               DownloadState.CANCELLED: "cancelled", DownloadState.PAUSED: "paused",
               DownloadState.VERIFYING: "checksum", DownloadState.RUNNING: "downloading",
               DownloadState.PENDING: "waiting"}
BAR_COLOURS = {DownloadState.DONE: "#2f9e64", DownloadState.PAUSED: "#c8a13a",
               DownloadState.FAILED: "#c0504d"}
BAR_DEFAULT = "#6c5ce7"


@dataclass(frozen=True)
class RowActions:
    """Which of a row's buttons apply now."""

    pause: bool
    resume: bool
    retry: bool  # Resume reads "Retry" (failed or cancelled: starts again)
    cancel: bool
    reveal: bool
    remove: bool


def row_actions(item: DownloadItem, running: bool) -> RowActions:
    """The buttons a download in ``item.state`` offers (``running``: a transfer is in flight)."""
    state = item.state
    again = state in (DownloadState.FAILED, DownloadState.CANCELLED)
    return RowActions(
        pause=running and state is not DownloadState.VERIFYING,
        resume=state is DownloadState.PAUSED or again,
        retry=again,
        cancel=running or state in (DownloadState.PAUSED, DownloadState.FAILED),
        reveal=state is DownloadState.DONE and bool(item.record.path),
        remove=not item.active,
    )


class DownloadRow(QFrame):
    action_requested = Signal(str, str, str)
    """A button was pressed: action (pause | resume | cancel | reveal | remove), repo, file."""

    def __init__(self, item: DownloadItem, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("DownloadRow")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.key = item.record.key
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        lay.setSpacing(4)
        head = QHBoxLayout()
        self.title = QLabel(item.title)
        self.title.setObjectName("RowTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        head.addWidget(self.title)
        self.repo = QLabel(item.record.repo_id)
        self.repo.setObjectName("Muted")
        self.repo.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        head.addWidget(self.repo, 1)
        self.pill = QLabel("")
        self.pill.setAlignment(Qt.AlignmentFlag.AlignCenter)
        head.addWidget(self.pill)
        lay.addLayout(head)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        lay.addWidget(self.bar)
        foot = QHBoxLayout()
        self.status = QLabel("")
        self.status.setObjectName("Muted")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        foot.addWidget(self.status, 1)
        self.pause_button = self._button("Pause", "pause", foot)
        self.resume_button = self._button("Resume", "resume", foot)
        self.cancel_button = self._button("Cancel", "cancel", foot, "Danger")
        self.reveal_button = self._button("Show in folder", "reveal", foot)
        self.remove_button = self._button("Remove", "remove", foot)
        self.remove_button.setToolTip("Remove from the list (a downloaded file stays)")
        lay.addLayout(foot)
        self.update_item(item, running=False)

    def _button(self, text: str, action: str, row: QHBoxLayout, name: str = "") -> QPushButton:
        b = QPushButton(text, self)
        if name:
            b.setObjectName(name)
        b.clicked.connect(lambda: self.action_requested.emit(action, *self.key))
        row.addWidget(b)
        return b

    def update_item(self, item: DownloadItem, running: bool) -> None:
        """Show ``item``'s current state, progress and the buttons that apply."""
        state = item.state
        bg, fg = tone_colours(STATE_TONES[state])
        self.pill.setText(STATE_WORDS[state])
        self.pill.setStyleSheet(f"background:{bg.name()}; color:{fg.name()}; "
                                "border-radius:8px; padding:1px 8px;")
        fraction = 0.0 if state is DownloadState.CANCELLED else item.fraction
        self.bar.setValue(int(fraction * 1000))
        self.bar.setStyleSheet("QProgressBar::chunk { background: "
                               f"{BAR_COLOURS.get(state, BAR_DEFAULT)}; border-radius: 4px; }}")
        text = item.status_text()
        self.status.setText(text)
        self.status.setToolTip(text)
        colour = tone_colours(Tone.BAD)[1].name() if state is DownloadState.FAILED else ""
        self.status.setStyleSheet(f"color:{colour};" if colour else "")
        self.setToolTip(f"{item.record.repo_id}/{item.record.filename}")
        a = row_actions(item, running)
        self.pause_button.setEnabled(a.pause)
        self.resume_button.setEnabled(a.resume)
        self.resume_button.setText("Retry" if a.retry else "Resume")
        self.cancel_button.setEnabled(a.cancel)
        self.reveal_button.setEnabled(a.reveal)
        self.remove_button.setEnabled(a.remove)
        # one of Pause / Resume at a time, as a toggle would; Cancel while there is something
        # to cancel; Show in folder once done
        self.pause_button.setVisible(running)
        self.resume_button.setVisible(not running and a.resume)
        self.cancel_button.setVisible(state is not DownloadState.DONE)
        self.reveal_button.setVisible(state is DownloadState.DONE)
