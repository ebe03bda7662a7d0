"""Every token origin the engine names has a colour: what a model drafted shows as
drafted, what was copied from text as lookup, the lossy rule's as relaxed, the
target's own as none (an origin the view did not know would show as the target's)."""

from __future__ import annotations

from specula.core.engine.events import TokenOrigin
from specula.gui.chat.render import SOURCE_LETTER


def test_each_origin_has_the_colour_a_user_should_see() -> None:
    expected = {  # the letters coloured_markdown paints: d drafted, l lookup, r relaxed, t none
        TokenOrigin.TARGET: "t", TokenOrigin.CHAIN: "d", TokenOrigin.TREE: "d",
        TokenOrigin.MTP: "d", TokenOrigin.LOOKUP: "l", TokenOrigin.NGRAM_CACHE: "l",
        TokenOrigin.RELAXED: "r",
    }
    assert set(expected) == set(TokenOrigin)
    assert {o: SOURCE_LETTER.get(o.value) for o in TokenOrigin} == expected
