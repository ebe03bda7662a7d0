"""Rough edges (issue 45, item 9): menus have a border in the dark theme; Compare keeps its
mode across a restart and offers MTP only for a target with MTP layers."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QMenu

from specula.core.engine.config import Mode
from specula.core.settings import Settings
from specula.gui import theme
from specula.gui.compare.options import CompareOptions, runnable_modes


def test_dark_menus_have_a_border(qtbot) -> None:  # type: ignore[no-untyped-def]
    menu = QMenu()
    qtbot.addWidget(menu)
    menu.setStyleSheet(theme.stylesheet("dark"))  # the app's dark sheet, on this menu alone
    for text in ("Copy", "Rename…", "Delete"):
        menu.addAction(text)
    menu.ensurePolished()
    image = menu.grab().toImage()
    y = image.height() // 2
    edge, inside = QColor(image.pixel(0, y)), QColor(image.pixel(2, y))
    assert edge.name() == "#4a4d5a", edge.name()  # the border the stylesheet draws
    assert inside.name() != edge.name()


def test_only_a_target_with_mtp_layers_is_offered_mtp() -> None:
    assert Mode.MTP not in [m for m, _l in runnable_modes(0)]
    assert Mode.MTP in [m for m, _l in runnable_modes(2)]
    assert [m for m, _l in runnable_modes(0)] == [Mode.CHAIN, Mode.ADAPTIVE, Mode.TREE,
                                                  Mode.LOOKUP]


def test_compare_keeps_its_mode_across_a_restart(loaded, make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    options = loaded.findChild(CompareOptions)
    assert options.mode.findData(Mode.MTP.value) < 0, "the tiny target has no MTP layers"
    options.linked.setChecked(False)
    options.mode.setCurrentIndex(options.mode.findData(Mode.TREE.value))
    assert (Settings.load().compare_linked, Settings.load().compare_mode) == (False, "tree")
    loaded.close()
    loaded.ctx.close()
    again = make_window()
    restored = again.findChild(CompareOptions)
    assert not restored.linked.isChecked()
    assert restored.mode.currentData() == Mode.TREE.value
    assert restored.speculative().mode == Mode.TREE.value
