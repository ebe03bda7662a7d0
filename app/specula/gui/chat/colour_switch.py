"""The token colour switch and its legend.

The legend sits on its own line under the switch and wraps there (a wrapping
label beside a combo box in one row gets clipped lines); its swatches are
painted from the current theme and repainted when the theme changes.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from specula.gui import theme
from specula.gui.theme import heat_colour

COLOUR_MODES = [("off", "No colouring"), ("source", "Colour by source"),
                ("heat", "Colour by draft confidence")]


def _swatch(colour: str, label: str) -> str:
    return (f'<span style="background-color:{colour}">&nbsp;&nbsp;&nbsp;&nbsp;</span>'
            f"&nbsp;{label} &nbsp; ")


def legend_html(mode: str) -> str:
    pal = theme.palette()
    if mode == "source":
        return (_swatch(pal.draft_bg, "accepted draft token") + _swatch(pal.lookup_bg, "prompt lookup")
                + _swatch(pal.relaxed_bg, "relaxed (lossy)") + "no colour: target token")
    if mode == "heat":
        steps = "".join(f'<span style="background-color:{heat_colour(i / 5)}">&nbsp;&nbsp;</span>'
                        for i in range(6))
        return f"draft confidence&nbsp;&nbsp;0 {steps} 1&nbsp;&nbsp;&nbsp;no colour: target token"
    return "Replies shown as Markdown without token colours"


class ColourSwitch(QWidget):
    mode_changed = Signal(str)
    """The token colouring changed: off | source | heat."""

    def __init__(self, mode: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        lay = QHBoxLayout()
        outer.addLayout(lay)
        self.combo = QComboBox()
        for key, label in COLOUR_MODES:
            self.combo.addItem(label, key)
        self.combo.setToolTip("Show which tokens the draft proposed and the target accepted")
        self.combo.setCurrentIndex(max(self.combo.findData(mode), 0))
        lay.addWidget(self.combo)
        lay.addStretch(1)
        self.legend = QLabel()
        self.legend.setObjectName("Muted")
        self.legend.setWordWrap(True)
        outer.addWidget(self.legend)
        self.combo.currentIndexChanged.connect(self._changed)
        self.legend.setText(legend_html(mode))
        theme.notifier().changed.connect(self._retheme)

    def _retheme(self, _name: str) -> None:
        self.legend.setText(legend_html(self.mode))

    @property
    def mode(self) -> str:
        return str(self.combo.currentData())

    def set_mode(self, mode: str) -> None:
        self.combo.setCurrentIndex(max(self.combo.findData(mode), 0))

    def _changed(self) -> None:
        self.legend.setText(legend_html(self.mode))
        self.mode_changed.emit(self.mode)
