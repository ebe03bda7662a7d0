"""Files attached to the message being written: a button, and chips with their token counts.

Reading and checking a file is :func:`specula.core.chat.attachments.read_attachment`
(size limit, text only); a refusal is shown in the chat's banner. The chips
go with the message when it is sent and then show on it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QPushButton, QToolButton, QWidget

from specula.core.chat.attachments import (
    MAX_BYTES,
    TEXT_SUFFIXES,
    Attachment,
    AttachmentError,
    read_attachment,
)

CHIP_WIDTH = 220  # the most a chip's text takes (px)
CHIP_MIN = 48  # what a chip keeps when the row is short of room (px)


def chip_text(a: Attachment, tokens: int | None) -> str:
    kib = len(a.text.encode("utf-8")) / 1024
    size = f"{kib:.1f} KiB" if kib < 10 else f"{kib:.0f} KiB"
    return f"{a.name} · {size}" + (f" · {tokens:,} tokens" if tokens is not None else "")


class AttachBar(QWidget):
    changed = Signal()
    """The pending attachments changed (the token counter recounts)."""
    refused = Signal(str)
    """A file could not be attached; why, in a sentence."""

    def __init__(self, count_text: Callable[[str], int | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._count = count_text
        self.pending: list[Attachment] = []
        self._lay = QHBoxLayout(self)
        self._lay.setContentsMargins(0, 0, 0, 0)
        self.button = QPushButton("Attach file…", self)
        self.button.setToolTip(f"Attach text files (code, Markdown, plain text; up to "
                               f"{MAX_BYTES // 1024} KiB each): their text goes into the "
                               f"context as a labelled block")
        self.button.clicked.connect(self.ask)
        self._lay.addWidget(self.button)
        self._chips: list[QToolButton] = []
        self._lay.addStretch(1)

    def ask(self) -> None:
        patterns = " ".join(f"*{s}" for s in TEXT_SUFFIXES)
        paths, _f = QFileDialog.getOpenFileNames(
            self, "Attach text files", "", f"Text files ({patterns});;All files (*)")
        for p in paths:
            self.add_file(p)

    def add_file(self, path: str) -> Attachment | None:
        try:
            a = read_attachment(path)
        except AttachmentError as exc:
            self.refused.emit(str(exc))
            return None
        self.pending.append(a)
        self._show()
        return a

    def chips(self) -> list[str]:
        return [chip_text(a, self._count(a.text)) for a in self.pending]

    def take(self) -> list[Attachment]:
        """The pending attachments, handed over to the message being sent."""
        out, self.pending = self.pending, []
        self._show()
        return out

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.pending):
            del self.pending[index]
            self._show()

    def recount(self) -> None:
        self._show(emit=False)

    def _show(self, emit: bool = True) -> None:
        for c in self._chips:
            self._lay.removeWidget(c)
            c.hide()  # gone at once, even before the event loop deletes it
            c.deleteLater()
        self._chips = []
        for i, text in enumerate(self.chips()):
            chip = QToolButton(self)
            chip.setObjectName("AttachmentChip")
            # A long file name is elided and the chips share the row: attaching never
            # makes the window wider (the whole name is the tooltip).
            shown = chip.fontMetrics().elidedText(text, Qt.TextElideMode.ElideMiddle, CHIP_WIDTH)
            chip.setText(f"{shown}  ✕")
            chip.setToolTip(f"{text}\nRemove this attachment")
            chip.setMinimumWidth(CHIP_MIN)  # its own width when there is room, less if not
            chip.clicked.connect(lambda _c=False, i=i: self.remove(i))
            self._lay.insertWidget(1 + i, chip)
            self._chips.append(chip)
        if emit:
            self.changed.emit()
