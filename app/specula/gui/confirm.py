"""One question before something is deleted for good: a chat, a message, a preset.

Every place that deletes holds ``confirm`` (this function by default) as an attribute,
so a test answers the question without a modal dialog.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget


def ask_yes_no(parent: QWidget | None, title: str, text: str) -> bool:
    """Yes or No, No being the default (Enter keeps what would be deleted)."""
    answer = QMessageBox.question(parent, title, text,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
