"""The token-colour legend: it wraps only between entries and has the column's width."""

from __future__ import annotations

import re

import pytest

from specula.gui.chat.colour_switch import legend_html


def entries(html: str) -> list[str]:
    """The pieces a line may break between (at plain spaces), as read, spaces collapsed."""
    text = re.sub(r"<[^>]+>", "", html).replace("&nbsp;", "\u00a0")
    return [" ".join(piece.split()) for piece in text.split(" ") if piece.strip()]


@pytest.mark.parametrize(("mode", "expected"), [
    ("source", ["accepted draft token", "prompt lookup", "relaxed (lossy)",
                "no colour: target token"]),
    ("heat", ["draft confidence 0 1", "no colour: target token"]),
])
def test_the_legend_breaks_only_between_its_entries(mode: str, expected: list[str]) -> None:
    assert entries(legend_html(mode)) == expected


def test_the_legend_spans_the_chat_column_at_1024x700(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    w.resize(1024, 700)
    page = w.chat
    qtbot.waitUntil(lambda: page.colours.legend.isVisible(), timeout=10000)
    legend, tools = page.colours.legend, page.colours.parentWidget()
    # Not squeezed beside the combo box: as wide as the switch and the buttons beside it.
    assert legend.width() >= page.colours.width() + page.export_button.width()
    assert legend.parentWidget() is tools
