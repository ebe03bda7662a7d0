"""A reply as HTML for the transcript: Markdown with highlighted code, or coloured tokens.

Markdown goes through markdown-it (CommonMark + tables) and code blocks
through pygments with inline styles, which QTextDocument renders. The token
view shows the raw text with each token's background telling where it came
from (accepted draft token, prompt lookup, the target itself) or, in heat
mode, how sure the draft was.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name, guess_lexer
from pygments.util import ClassNotFound

from specula.gui.theme import Palette, heat_colour

# A token as stored with a message: (text, source letter d|t|l|r, draft probability or None).
TokenTuple = tuple[str, str, "float | None"]

SOURCE_LETTER = {"draft": "d", "target": "t", "lookup": "l"}


def _lexer(code: str, lang: str):  # type: ignore[no-untyped-def]
    if lang:
        try:
            return get_lexer_by_name(lang)
        except ClassNotFound:
            pass
    try:
        return guess_lexer(code) if len(code) > 40 else TextLexer()
    except ClassNotFound:
        return TextLexer()


def code_html(code: str, lang: str, pal: Palette) -> str:
    formatter = HtmlFormatter(noclasses=True, nowrap=True, style=pal.code_style)
    body = highlight(code, _lexer(code, lang), formatter).rstrip("\n")
    return (
        f'<table width="100%" cellpadding="8" cellspacing="0" bgcolor="{pal.code_bg}">'
        f'<tr><td><pre style="margin:0">{body}</pre></td></tr></table><br>'
    )


def _md(pal: Palette) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def fence(self, tokens, idx, options, env):  # type: ignore[no-untyped-def]
        tok = tokens[idx]
        lang = tok.info.strip().split(" ")[0] if tok.info else ""
        return code_html(tok.content, lang, pal)

    md.add_render_rule("fence", fence)
    md.add_render_rule("code_block", fence)
    return md


_parsers: dict[int, MarkdownIt] = {}


def markdown_html(text: str, pal: Palette) -> str:
    md = _parsers.get(id(pal))
    if md is None:
        md = _parsers[id(pal)] = _md(pal)
    return md.render(text)


def token_colour(src: str, prob: float | None, mode: str, pal: Palette) -> str:
    """The background for one token; '' for none."""
    if src == "t":
        return ""
    if mode == "heat":
        return heat_colour(prob) if prob is not None else pal.draft_bg
    return {"d": pal.draft_bg, "l": pal.lookup_bg, "r": pal.relaxed_bg}.get(src, "")


def tokens_html(tokens: Sequence[TokenTuple], mode: str, pal: Palette) -> str:
    """The raw reply with token backgrounds (adjacent tokens of one colour merged)."""
    parts: list[str] = []
    run_colour: str | None = None
    run: list[str] = []

    def flush() -> None:
        if not run:
            return
        text = html.escape("".join(run))
        if run_colour:
            parts.append(f'<span style="background-color:{run_colour}">{text}</span>')
        else:
            parts.append(text)
        run.clear()

    for text, src, prob in tokens:
        colour = token_colour(src, prob, mode, pal)
        if colour != run_colour:
            flush()
            run_colour = colour
        run.append(text)
    flush()
    return f'<p style="white-space: pre-wrap">{"".join(parts)}</p>'


def plain_html(text: str) -> str:
    return f'<p style="white-space: pre-wrap">{html.escape(text)}</p>'
