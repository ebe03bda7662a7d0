"""The mouse wheel scrolls the page, not the unfocused input under the pointer.

Qt lets a wheel event change any spin box, combo box or slider it passes over,
so scrolling a settings panel edits settings (Top-k 40 became 29). One
application-wide event filter sends such events to the nearest scroll area
instead, unless the input has keyboard focus (the user clicked into it).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QScrollBar,
    QWidget,
)

GUARDED = (QAbstractSpinBox, QComboBox, QAbstractSlider)


def _guarded(obj: QObject) -> QWidget | None:
    """The input widget ``obj`` belongs to (a spin box's line edit counts), if guarded."""
    w = obj if isinstance(obj, QWidget) else None
    while w is not None:
        if isinstance(w, QScrollBar):
            return None
        if isinstance(w, GUARDED):
            return w
        if isinstance(w, QAbstractScrollArea):
            return None  # e.g. a combo's popup list scrolls itself
        w = w.parentWidget()
    return None


class WheelGuard(QObject):
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel:
            return False
        widget = _guarded(obj)
        if widget is None or widget.hasFocus():
            return False
        area = widget.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:
            QApplication.sendEvent(area.verticalScrollBar(), event)
        return True  # never let it change the value


_guard: WheelGuard | None = None


def install() -> WheelGuard:
    """Install the guard on the running application once."""
    global _guard
    app = QApplication.instance()
    if _guard is None and app is not None:
        _guard = WheelGuard(app)
        app.installEventFilter(_guard)
    assert _guard is not None
    return _guard
