"""The screenshot tools' waits run the Qt event loop: a timer fires while they wait."""

from __future__ import annotations

import pytest

from specula_tools.qt_waits import Waits


def test_wait_runs_the_event_loop_until_the_condition_holds() -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    fired: list[bool] = []
    QTimer.singleShot(50, lambda: fired.append(True))
    waits = Waits(app, timeout=10.0, settle_s=0.01)
    waits.wait(lambda: bool(fired))  # only the event loop can fire the timer
    assert fired
    waits.settle()
    with pytest.raises(TimeoutError):
        waits.wait(lambda: False, timeout=0.05)
