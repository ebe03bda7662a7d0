"""Widgets that never widen the window for a long name: elided text, the full text a tooltip.

File names of one model family differ at the end (…-q4_k_m.gguf vs …-q8_0.gguf)
and at the start, so in a label the middle is what can go. A picker's entry is
a clean name with its size and quantization apart ("Qwen2.5 Coder 1.5B
Instruct  1.5B · Q4_K_M"): there the detail stays whole and the name is cut at
its end.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QSize, Qt
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


DETAIL_ROLE = Qt.ItemDataRole.UserRole + 20  # a short part shown whole after the name


NAME_KEPT = "Qwen2"  # the least of a name worth showing (its family), then "…"


def shown_with_detail(name: str, detail: str, width: int, advance: Callable[[str], int],
                      elide: Callable[[str, int], str]) -> str:
    """A picker's text at ``width`` px: the name cut at its end before the whole detail
    ("Qwen2.5 Cod…  1.5B · Q4_K_M"); when the detail leaves the name too little room, the
    size alone ("Qwen2.5 Coder…  1.5B"); at the narrowest, the detail alone. Never a name
    cut to its first and last letter ("Q…t")."""
    parts = [p for p in detail.split(" · ") if p]
    least = advance(NAME_KEPT + "…")
    for tail in (f"  {detail}", f"  {parts[0]}" if parts else ""):
        room = width - advance(tail)
        if tail and room >= min(least, advance(name)):
            return elide(name, room) + tail
    return elide(detail, width)


class ElidingCombo(QComboBox):
    """A combo box whose width does not follow its longest item; names elide at their end
    (their start says which model), with the whole text as the box's tooltip.

    An item may carry a detail (:data:`DETAIL_ROLE`, e.g. "1.5B · Q4_K_M"): the box then
    shows the name elided before it and the detail whole, so two models of one family
    still look different in a narrow box (:func:`shown_with_detail`).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(6)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.view().setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.currentIndexChanged.connect(lambda _i: self.setToolTip(self.tip_text()))

    def tip_text(self) -> str:
        """The whole current text, and the item's own tooltip (a path) under it."""
        index = self.currentIndex()
        if index < 0:
            return ""
        own = self.itemData(index, Qt.ItemDataRole.ToolTipRole)
        text = self.itemText(index)
        return f"{text}\n{own}" if own and own != text else text

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:  # the items may have changed since
            self.setToolTip(self.tip_text())
        return super().event(event)

    def shown_text(self) -> str:
        """The current text as painted (elided to the box's width)."""
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        rect = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                           QStyle.SubControl.SC_ComboBoxEditField, self)
        width = max(rect.width() - 4, 10)
        detail = self.currentData(DETAIL_ROLE) if self.currentIndex() >= 0 else None
        fm = self.fontMetrics()

        def elide(text: str, room: int) -> str:
            return fm.elidedText(text, Qt.TextElideMode.ElideRight, max(room, 0))

        if detail:
            text = str(opt.currentText)
            tail = f"  {detail}"
            if text.endswith(tail):
                text = text[: -len(tail)]
            return shown_with_detail(text, str(detail), width, fm.horizontalAdvance, elide)
        return elide(str(opt.currentText), width)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        p.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        p.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)
