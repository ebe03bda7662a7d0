"""A small QPainter line chart: rolling tokens/s (left axis) and acceptance % (right axis)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from specula.gui import theme
from specula.gui.stats.live_stats import ChartPoint, axis_label, nice_ceiling

MAX_DRAWN = 400


class RateChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.points: list[ChartPoint] = []
        self.axis_top = 1.0  # the rate axis' top label: a 1-2-5 step, never 0
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_points(self, points: list[ChartPoint]) -> None:
        self.points = points
        self.axis_top = nice_ceiling(max((c.rate for c in points), default=0.0) * 1.05)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        pal = theme.palette()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        font = p.font()
        font.setPointSizeF(max(font.pointSizeF() - 1.5, 6.5))
        p.setFont(font)
        area = QRectF(self.rect()).adjusted(34, 16, -34, -16)
        p.setPen(QPen(QColor(pal.chart_grid), 1))
        for i in range(5):
            y = area.top() + area.height() * i / 4
            p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y))
        pts = self.points
        if len(pts) > MAX_DRAWN:
            stride = len(pts) / MAX_DRAWN
            pts = [pts[int(i * stride)] for i in range(MAX_DRAWN)] + [pts[-1]]
        max_rate = self.axis_top
        max_x = max(pts[-1].tokens if pts else 1, 1)
        p.setPen(QColor(pal.chart_rate))
        p.drawText(QRectF(0, 0, 120, 14), Qt.AlignmentFlag.AlignLeft, "tok/s")
        p.drawText(QRectF(0, area.top() - 6, 30, 12), Qt.AlignmentFlag.AlignRight,
                   axis_label(max_rate))
        p.drawText(QRectF(0, area.bottom() - 6, 30, 12), Qt.AlignmentFlag.AlignRight, "0")
        p.setPen(QColor(pal.chart_accept))
        w = self.width()
        p.drawText(QRectF(w - 120, 0, 120, 14), Qt.AlignmentFlag.AlignRight, "accepted %")
        p.drawText(QRectF(w - 32, area.top() - 6, 32, 12), Qt.AlignmentFlag.AlignLeft, "100")
        p.drawText(QRectF(w - 32, area.bottom() - 6, 32, 12), Qt.AlignmentFlag.AlignLeft, "0")
        p.setPen(QColor(pal.muted))
        p.drawText(QRectF(area.left(), area.bottom() + 2, area.width(), 14),
                   Qt.AlignmentFlag.AlignCenter, f"tokens (0-{max_x})" if pts else "the chart starts after ~1 s of a reply")
        if not pts:
            p.end()
            return

        def xy(tokens: int, frac: float) -> QPointF:
            return QPointF(area.left() + area.width() * tokens / max_x,
                           area.bottom() - area.height() * min(max(frac, 0.0), 1.0))

        rate = QPainterPath(xy(pts[0].tokens, pts[0].rate / max_rate))
        for c in pts[1:]:
            rate.lineTo(xy(c.tokens, c.rate / max_rate))
        p.setPen(QPen(QColor(pal.chart_rate), 2))
        p.drawPath(rate)
        acc = [(c.tokens, c.acceptance) for c in pts if c.acceptance is not None]
        if acc:
            path = QPainterPath(xy(*acc[0]))
            for tokens, frac in acc[1:]:
                path.lineTo(xy(tokens, frac))
            p.setPen(QPen(QColor(pal.chart_accept), 2, Qt.PenStyle.DashLine))
            p.drawPath(path)
        p.end()
