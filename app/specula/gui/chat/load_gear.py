"""The gear next to the target picker: context length and GPU offload for the next load.

It opens the shared load options (:class:`specula.gui.load_options.LoadOptionsDialog`,
the same widget as on the Settings page). Options only take effect when a
model is loaded, so when a target is loaded and the user presses OK, the
target (and the draft) are loaded again with them, as LM Studio reloads a
model whose load settings changed. With a target loaded, the dialog shows the
context it runs with and saves the choice as that model's own load defaults
(the ones My Models' "Load defaults" edits), so one value is shown everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QToolButton, QWidget

from specula.gui.context import AppContext
from specula.gui.load_options import LoadOptionsDialog


class LoadGear(QToolButton):
    def __init__(self, ctx: AppContext, reload: Callable[[], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._reload = reload
        self.setText("⚙")
        self.setObjectName("LoadGear")
        self.setToolTip("Load options: context length and GPU offload "
                        "(a loaded model is loaded again with them)")
        self.clicked.connect(self.open_dialog)
        self.dialog: LoadOptionsDialog | None = None

    def open_dialog(self) -> int:
        e = self.ctx.engine
        self.dialog = LoadOptionsDialog(self.ctx, e.target_info, e.draft_info, self,
                                        e.target_info.source if e.target_info else "")
        result = self.dialog.exec()
        if result == QDialog.DialogCode.Accepted and e.has_target:
            self._reload()
        return int(result)
