"""Start the desktop app (placeholder window until the GUI lands)."""

from __future__ import annotations

import sys


def run_app(model: str | None = None, draft: str | None = None) -> int:
    from PySide6.QtWidgets import QApplication, QLabel

    app = QApplication.instance() or QApplication(sys.argv)
    label = QLabel("Specula: the desktop app is on its way. Try `specula --help`.")
    label.setWindowTitle("Specula")
    label.resize(480, 120)
    label.show()
    return int(app.exec())
