"""The button row of a dialog that asks for a choice: accept (OK or Save) and Cancel."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox

Button = QDialogButtonBox.StandardButton


def accept_cancel(dialog: QDialog, accept: Button = Button.Ok) -> QDialogButtonBox:
    """``accept`` and Cancel, wired to the dialog's accept and reject (add it to a layout)."""
    buttons = QDialogButtonBox(accept | Button.Cancel, dialog)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons
