"""The token colour switch and its legend.

The legend (:attr:`ColourSwitch.legend`) is placed by the owner on its own line
under the row that holds the switch, as wide as the column (beside a combo box a
wrapping label gets clipped lines; under the switch alone it had the combo's
width). It wraps only between its entries: a swatch stays with its words and
"relaxed (lossy)" on one line. Its swatches are painted from the current theme
and repainted when the theme changes.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from specula.gui import theme
from specula.gui.theme import heat_colour

COLOUR_MODES = [("off", "No colouring"), ("source", "Colour by source"),
                ("heat", "Colour by draft confidence")]


def _keep(text: str) -> str:
    """``text`` that never wraps inside (its spaces do not break)."""
    return text.replace(" ", "&nbsp;")


def _swatch(colour: str, label: str) -> str:
    return (f'<span style="background-color:{colour}">&nbsp;&nbsp;&nbsp;&nbsp;</span>'
            f"&nbsp;{_keep(label)}")


def _items(*items: str) -> str:
    """The legend's entries, wrapping only between them (never a swatch from its words)."""
    return "&nbsp;&nbsp; ".join(items)


def legend_html(mode: str) -> str:
    pal = theme.palette()
    target = _keep("no colour: target token")
    if mode == "source":
        return _items(_swatch(pal.draft_bg, "accepted draft token"),
                      _swatch(pal.lookup_bg, "prompt lookup"),
                      _swatch(pal.relaxed_bg, "relaxed (lossy)"), target)
    if mode == "heat":
        steps = "".join(f'<span style="background-color:{heat_colour(i / 5)}">&nbsp;&nbsp;</span>'
                        for i in range(6))
        return _items(f"{_keep('draft confidence')}&nbsp;&nbsp;0&nbsp;{steps}&nbsp;1", target)
    return "Replies shown as Markdown without token colours"


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
        lay.addStretch(1)
        self.legend = QLabel()  # the owner lays it out (see the module's note)
        self.legend.setObjectName("Muted")
        self.legend.setWordWrap(True)
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
