"""Reply HTML for the views: one renderer (:mod:`coloured_markdown`) and plain text.

``markdown_html`` and ``tokens_html`` are the same view with colouring off or
on, kept as names other pages (Compare) can call.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from specula.gui.chat.coloured_markdown import TokenTuple, render_reply, token_colour
from specula.gui.theme import Palette

__all__ = ["SOURCE_LETTER", "TokenTuple", "markdown_html", "plain_html", "token_colour",
           "tokens_html"]

# A token's colour letter by its origin (events.TokenOrigin's values): whatever a model
# drafted (the draft's chain or tree, the target's MTP layers) is "drafted"; what was
# copied from text (the conversation, the n-gram cache) is "lookup".
SOURCE_LETTER = {"draft": "d", "tree": "d", "mtp": "d", "target": "t", "lookup": "l",
                 "ngram-cache": "l", "relaxed": "r"}


def markdown_html(text: str, pal: Palette) -> str:
    return render_reply([], text, "off", pal).html


def tokens_html(tokens: Sequence[TokenTuple], mode: str, pal: Palette) -> str:
    """Markdown with each token's background (``mode``: source | heat)."""
    return render_reply(tokens, "".join(t for t, _s, _p in tokens), mode, pal).html


def plain_html(text: str) -> str:
    return f'<p style="white-space: pre-wrap">{html.escape(text)}</p>'
