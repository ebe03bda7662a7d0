"""Light and dark themes: QSS files from ``resources/themes`` plus colours used in code.

"system" follows the desktop's colour scheme (Qt's style hints): light or dark
now, and again whenever the desktop switches. :func:`chosen` is the setting,
:func:`current` the theme painted (never "system").

The QSS files live in the repository's top-level ``resources/`` folder. An
installed wheel carries a copy inside the package (``specula/resources``,
copied by ``setup.py``'s build step); a source checkout reads the folder
itself. :func:`resources_dir` finds whichever exists.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

import specula

log = logging.getLogger("specula.gui.theme")

THEMES = ("dark", "light", "system")


def resources_dir() -> Path:
    """The folder holding ``themes/`` (package data first, then the source checkout)."""
    pkg = Path(specula.__file__).resolve().parent
    for candidate in (pkg / "resources", pkg.parents[1] / "resources"):
        if (candidate / "themes").is_dir():
            return candidate
    raise FileNotFoundError(
        f"Specula's resources folder is missing (looked in {pkg / 'resources'} and "
        f"{pkg.parents[1] / 'resources'})"
    )


def stylesheet(name: str) -> str:
    return (resources_dir() / "themes" / f"{name}.qss").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Palette:
    """Colours drawn from Python: token backgrounds, heat scale, chart lines."""

    text: str
    muted: str
    draft_bg: str  # an accepted draft token
    lookup_bg: str  # an accepted prompt-lookup token
    target_bg: str  # a token the target produced itself
    relaxed_bg: str  # accepted only by the lossy rule
    heat_low: tuple[int, int, int]
    heat_high: tuple[int, int, int]
    code_bg: str
    code_style: str  # pygments style name
    chart_rate: str
    chart_accept: str
    chart_grid: str
    danger: str = "#e5534b"  # a refusal in a list (an incompatible draft): readable on both


PALETTES: dict[str, Palette] = {
    "dark": Palette(
        text="#e4e5e9", muted="#9a9daa", draft_bg="#1f5e3a", lookup_bg="#1f4a6e",
        target_bg="transparent", relaxed_bg="#6b4a12", heat_low=(140, 40, 40),
        heat_high=(30, 110, 60), code_bg="#15161a", code_style="monokai",
        chart_rate="#b7adff", chart_accept="#4cc38a", chart_grid="#33353e",
    ),
    "light": Palette(
        text="#1d1e22", muted="#666a7a", draft_bg="#c4ecd2", lookup_bg="#cfe3f7",
        target_bg="transparent", relaxed_bg="#f7e0b0", heat_low=(245, 180, 180),
        heat_high=(170, 230, 190), code_bg="#f0f0f4", code_style="friendly",
        chart_rate="#5b4bd6", chart_accept="#1f9d5c", chart_grid="#e0e1e7",
    ),
}

_current = "dark"
_chosen = "dark"
_following = False  # connected to the desktop's colour scheme changes


class ThemeNotifier(QObject):
    changed = Signal(str)
    """The theme changed (its name): views that paint palette colours re-render."""


_notifier: ThemeNotifier | None = None


def notifier() -> ThemeNotifier:
    """The one object that announces theme changes (created on first use)."""
    global _notifier
    if _notifier is None:
        _notifier = ThemeNotifier(QApplication.instance())
    return _notifier


def current() -> str:
    """The theme painted now: "dark" or "light"."""
    return _current


def chosen() -> str:
    """The theme the settings ask for: "dark", "light" or "system"."""
    return _chosen


def system_scheme() -> str:
    """"light" or "dark", as the desktop's colour scheme says (dark when it says nothing)."""
    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return "dark"
    scheme = QGuiApplication.styleHints().colorScheme()
    return "light" if scheme == Qt.ColorScheme.Light else "dark"


def _desktop_changed(*_args: object) -> None:
    if _chosen == "system":
        apply("system")


def palette() -> Palette:
    return PALETTES[_current]


def apply(name: str) -> None:
    """Apply theme ``name`` to the running QApplication ("system": the desktop's scheme)."""
    global _current, _chosen, _following
    if name not in THEMES:
        log.warning("unknown theme %r; using dark", name)
        name = "dark"
    _chosen = name
    if name == "system":
        name = system_scheme()
        app = QGuiApplication.instance()
        if not _following and isinstance(app, QGuiApplication):
            QGuiApplication.styleHints().colorSchemeChanged.connect(_desktop_changed)
            _following = True
    changed = name != _current
    _current = name
    app = QApplication.instance()
    if isinstance(app, QApplication):
        app.setStyleSheet(stylesheet(name))
        if changed:
            notifier().changed.emit(name)


def heat_colour(prob: float) -> str:
    """The heat-scale background for a draft probability in [0, 1]."""
    p = min(max(prob, 0.0), 1.0)
    lo, hi = palette().heat_low, palette().heat_high
    r, g, b = (round(a + (c - a) * p) for a, c in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"
