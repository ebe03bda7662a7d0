"""Widgets that never widen the window for a long name: text elided in the middle.

File names of one model family differ at the end (…-q4_k_m.gguf vs …-q8_0.gguf)
and at the start, so the middle is what can go; the full text is the tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)


class ElidedLabel(QLabel):
    """A one-line label that shrinks to any width, eliding its text in the middle."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        self.setToolTip(text)
        super().setText(text)
        self.update()

    def full_text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideMiddle,
                                              self.contentsRect().width())
        p.setPen(self.palette().color(self.foregroundRole()))
        p.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter),
                   shown)


class ElidingCombo(QComboBox):
    """A combo box whose width does not follow its longest item; names elide in the middle."""

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
        return self.fontMetrics().elidedText(opt.currentText, Qt.TextElideMode.ElideMiddle,
                                             max(rect.width() - 4, 10))

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        p.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        p.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)
