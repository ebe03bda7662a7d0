"""The token colour switch and its legend."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from specula.gui import theme
from specula.gui.theme import heat_colour

COLOUR_MODES = [("off", "Markdown"), ("source", "Colour by source"),
                ("heat", "Colour by draft confidence")]


def _swatch(colour: str, label: str) -> str:
    return (f'<span style="background-color:{colour}">&nbsp;&nbsp;&nbsp;&nbsp;</span>'
            f"&nbsp;{label}&nbsp;&nbsp;&nbsp;")


def legend_html(mode: str) -> str:
    pal = theme.palette()
    if mode == "source":
        return (_swatch(pal.draft_bg, "accepted draft token") + _swatch(pal.lookup_bg, "prompt lookup")
                + _swatch(pal.relaxed_bg, "relaxed (lossy)") + "no colour: target token")
    if mode == "heat":
        steps = "".join(f'<span style="background-color:{heat_colour(i / 5)}">&nbsp;&nbsp;</span>'
                        for i in range(6))
        return f"draft confidence&nbsp;&nbsp;0 {steps} 1&nbsp;&nbsp;&nbsp;no colour: target token"
    return "Replies shown as Markdown"


class ColourSwitch(QWidget):
    mode_changed = Signal(str)
    """The token colouring changed: off | source | heat."""

    def __init__(self, mode: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.combo = QComboBox()
        for key, label in COLOUR_MODES:
            self.combo.addItem(label, key)
        self.combo.setToolTip("Show which tokens the draft proposed and the target accepted")
        self.combo.setCurrentIndex(max(self.combo.findData(mode), 0))
        lay.addWidget(self.combo)
        self.legend = QLabel()
        self.legend.setObjectName("Muted")
        self.legend.setWordWrap(True)
        self.legend.setMinimumWidth(120)
        lay.addWidget(self.legend, 1)
        self.combo.currentIndexChanged.connect(self._changed)
        self.legend.setText(legend_html(mode))

    @property
    def mode(self) -> str:
        return str(self.combo.currentData())

    def set_mode(self, mode: str) -> None:
        self.combo.setCurrentIndex(max(self.combo.findData(mode), 0))

    def _changed(self) -> None:
        self.legend.setText(legend_html(self.mode))
        self.mode_changed.emit(self.mode)
