"""Widgets that never widen the window for a long name: text elided in the middle.

File names of one model family differ at the end (…-q4_k_m.gguf vs …-q8_0.gguf)
and at the start, so the middle is what can go; the full text is the tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QSizePolicy,
    QStyle,
    QStyleOptionButton,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)


class ElidedLabel(QLabel):
    """A one-line label that shrinks to any width, eliding its text (in the middle unless
    ``mode`` says otherwise); the whole text is its tooltip, before ``tip`` when given."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle, tip: str = "") -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._tip = tip
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        self.setToolTip(f"{text}\n{self._tip}" if self._tip and text else self._tip or text)
        super().setText(text)
        self.update()

    def full_text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        shown = self.fontMetrics().elidedText(self._full, self._mode, self.contentsRect().width())
        p.setPen(self.palette().color(self.foregroundRole()))
        p.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter),
                   shown)


class ElidedCheckBox(QCheckBox):
    """A check box whose label never widens the window: past ``keep`` (the part that must
    stay readable, e.g. "Speculative: on") the text elides at its end, whole in the tooltip
    the owner sets; it asks for no more than ``room`` (its neighbours need the rest)."""

    def __init__(self, keep: str = "", room: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._keep = keep
        self._room = room or keep
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def minimumSizeHint(self) -> QSize:
        full = super().sizeHint()
        opt = QStyleOptionButton()
        self.initStyleOption(opt)
        text_w = self.fontMetrics().horizontalAdvance(self.text())
        keep_w = self.fontMetrics().horizontalAdvance(self._keep + "…")
        return QSize(max(full.width() - text_w + min(keep_w, text_w), 0), full.height())

    def sizeHint(self) -> QSize:
        full = super().sizeHint()
        text_w = self.fontMetrics().horizontalAdvance(self.text())
        room = self.fontMetrics().horizontalAdvance(self._room + "…")
        return QSize(full.width() - text_w + min(room, text_w), full.height())

    def shown_text(self) -> str:
        """The label as painted (elided to the width the box has)."""
        opt = QStyleOptionButton()
        self.initStyleOption(opt)
        rect = self.style().subElementRect(QStyle.SubElement.SE_CheckBoxContents, opt, self)
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             max(rect.width(), 10))

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QStylePainter(self)
        opt = QStyleOptionButton()
        self.initStyleOption(opt)
        opt.text = self.shown_text()
        p.drawControl(QStyle.ControlElement.CE_CheckBox, opt)


DETAIL_ROLE = Qt.ItemDataRole.UserRole + 20  # a short part shown whole after the name


class ElidingCombo(QComboBox):
    """A combo box whose width does not follow its longest item; names elide in the middle.

    An item may carry a detail (:data:`DETAIL_ROLE`, e.g. "1.5B · Q4_K_M"): the box then
    shows the name elided before it and the detail whole, so two models of one family
    still look different in a narrow box.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(6)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.view().setTextElideMode(Qt.TextElideMode.ElideMiddle)

    def shown_text(self) -> str:
        """The current text as painted (elided to the box's width)."""
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        rect = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                           QStyle.SubControl.SC_ComboBoxEditField, self)
        width = max(rect.width() - 4, 10)
        detail = self.currentData(DETAIL_ROLE) if self.currentIndex() >= 0 else None
        if detail:
            text = str(opt.currentText)
            tail = f"  {detail}"
            if text.endswith(tail):
                text = text[: -len(tail)]
            fm = self.fontMetrics()
            room = width - fm.horizontalAdvance(tail)
            if room >= fm.horizontalAdvance("M…M"):
                return fm.elidedText(text, Qt.TextElideMode.ElideMiddle, room) + tail
            return fm.elidedText(str(detail), Qt.TextElideMode.ElideRight, width)
        return self.fontMetrics().elidedText(opt.currentText, Qt.TextElideMode.ElideMiddle,
                                             width)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        p.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        p.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)
