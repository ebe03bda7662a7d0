"""Painting the core's :class:`~specula.core.pairing.badges.Badge` as a coloured pill in a view.

A model returns a Badge for :data:`BADGE_ROLE`; :class:`BadgeDelegate` draws
it (rounded background in the tone's colour, the text, the detail as the
cell's tooltip). A busy badge shows a spinner glyph that the model advances.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from specula.core.pairing.badges import Badge, Tone
from specula.gui import theme

BADGE_ROLE = Qt.ItemDataRole.UserRole + 20
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

# (background, text) per tone and theme
_COLOURS: dict[str, dict[Tone, tuple[str, str]]] = {
    "dark": {
        Tone.GOOD: ("#1f5e3a", "#c8f5d8"), Tone.OK: ("#5e4c12", "#ffe7a6"),
        Tone.BAD: ("#6b2a2a", "#ffd0d0"), Tone.NEUTRAL: ("#30323b", "#b9bcc8"),
        Tone.BUSY: ("#2f2a55", "#d6d0ff"),
    },
    "light": {
        Tone.GOOD: ("#c9efd6", "#145c33"), Tone.OK: ("#f8e6b5", "#6a4d00"),
        Tone.BAD: ("#fbd9d9", "#9a1c1c"), Tone.NEUTRAL: ("#e6e7ee", "#4a4d5a"),
        Tone.BUSY: ("#e4e0ff", "#3d2fa8"),
    },
}


def tone_colours(tone: Tone) -> tuple[QColor, QColor]:
    bg, fg = _COLOURS.get(theme.current(), _COLOURS["dark"])[tone]
    return QColor(bg), QColor(fg)


def badge_text(badge: Badge, frame: int = 0) -> str:
    if badge.tone is Tone.BUSY:
        return f"{SPINNER[frame % len(SPINNER)]} {badge.text}"
    return badge.text


def paint_badge(painter: QPainter, rect: QRect, badge: Badge, frame: int = 0) -> None:
    """A pill with ``badge``'s text, vertically centred in ``rect``, left aligned."""
    text = badge_text(badge, frame)
    metrics = painter.fontMetrics()
    width = min(metrics.horizontalAdvance(text) + 14, rect.width() - 4)
    height = metrics.height() + 4
    pill = QRect(rect.left() + 2, rect.center().y() - height // 2 + 1, width, height)
    bg, fg = tone_colours(badge.tone)
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(bg)
    painter.drawRoundedRect(pill, height / 2, height / 2)
    painter.setPen(fg)
    elided = metrics.elidedText(text, Qt.TextElideMode.ElideRight, pill.width() - 12)
    painter.drawText(pill.adjusted(7, 0, -5, 0), Qt.AlignmentFlag.AlignVCenter, elided)
    painter.restore()


class BadgeDelegate(QStyledItemDelegate):
    """Draws the Badge of :data:`BADGE_ROLE`; the model's ``spinner_frame`` animates busy ones."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        badge = index.data(BADGE_ROLE)
        if not isinstance(badge, Badge):
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget  # type: ignore[attr-defined]
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        frame = int(getattr(index.model(), "spinner_frame", 0))
        paint_badge(painter, option.rect.adjusted(4, 0, -2, 0), badge, frame)  # type: ignore[attr-defined]

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        badge = index.data(BADGE_ROLE)
        base = super().sizeHint(option, index)
        if not isinstance(badge, Badge):
            return base
        width = option.fontMetrics.horizontalAdvance(badge_text(badge)) + 28  # type: ignore[attr-defined]
        return QSize(max(base.width(), width), max(base.height(), option.fontMetrics.height() + 12))  # type: ignore[attr-defined]
