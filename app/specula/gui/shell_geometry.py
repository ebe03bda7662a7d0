"""Where the main window opens: inside the screen's available area, at the size it was left.

Why: a first window of a fixed 1320x840 was larger than a 1280x800 screen, so the
right column and the composer opened cut off. The first size is the preferred
one shrunk to the available geometry (the screen less panels and docks); a
remembered geometry is restored and then pulled back inside the screen it is
on, in case that screen got smaller or is gone.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize

PREFERRED = QSize(1320, 840)
MARGIN = 0.96  # of the available area, so the frame and its shadow fit too


def first_geometry(available: QRect, preferred: QSize = PREFERRED) -> QRect:
    """The preferred size shrunk to fit ``available``, centred in it."""
    w = min(preferred.width(), int(available.width() * MARGIN))
    h = min(preferred.height(), int(available.height() * MARGIN))
    rect = QRect(0, 0, max(w, 1), max(h, 1))
    rect.moveCenter(available.center())
    return rect


def inside(rect: QRect, available: QRect) -> QRect:
    """``rect`` no larger than ``available`` and moved into it."""
    w = min(rect.width(), available.width())
    h = min(rect.height(), available.height())
    x = min(max(rect.x(), available.x()), available.x() + available.width() - w)
    y = min(max(rect.y(), available.y()), available.y() + available.height() - h)
    return QRect(x, y, w, h)
