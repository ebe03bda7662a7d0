"""One view of a reply: Markdown and highlighted code, with the draft colouring inside.

Why this way: colouring needs the raw tokens, Markdown needs the whole text,
and the two must agree on every character. So each coloured run of the text
is wrapped in private-use marker characters, the marked text goes through
markdown-it, and the markers become ``<span>`` backgrounds afterwards, closed
and reopened around every tag so the HTML stays well nested. Markers never
go where Markdown reads syntax (the start of a line with ``#``, ``-``, ``>``,
a fence, a table rule or a table row's pipes, a link target, the ``*``, ``_``,
backtick and ``~`` delimiters outside code), so they cannot break it. Code blocks
strip the markers and paint each character with pygments' colour (text) and
the token's colour (background), under a header with the language and a
per-block "Copy" link (``copy:N``). Leading whitespace is never coloured:
an accepted indentation token is not worth a coloured box.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name, guess_lexer
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound

from specula.gui.theme import Palette, heat_colour

# A token as stored with a message: (text, source letter d|t|l|r, draft probability or None).
TokenTuple = tuple[str, str, "float | None"]

END = "\ue0ff"
START_BASE = 0xE100
_MARKER = re.compile("[\ue0ff\ue100-\ue8ff]")

# Where a marker would change what Markdown reads: kept free of colour.
_LINE_PREFIX = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+|>[ \t]?|#{1,6}(?:[ \t]+|$))*")
_WHOLE_LINE = re.compile(
    r" {0,3}(?:`{3,}|~{3,}).*"  # fence lines (with the language)
    r"|[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*"  # table rules
    r"| {0,3}(?:[-*_=][ \t]*){3,}"  # thematic breaks and setext underlines
)
_FENCE = re.compile(r" {0,3}(?:`{3,}|~{3,})")
_INDENT = re.compile(r"[ \t]*")
_DELIMITERS = frozenset("*_`~")
_LINK_TARGET = re.compile(r"\]\([^)\n]*\)|<[a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*>")


def token_colour(src: str, prob: float | None, mode: str, pal: Palette) -> str:
    """The background for one token; '' for none."""
    if src == "t" or mode == "off":
        return ""
    if mode == "heat":
        return heat_colour(prob) if prob is not None else pal.draft_bg
    return {"d": pal.draft_bg, "l": pal.lookup_bg, "r": pal.relaxed_bg}.get(src, "")


def char_colours(tokens: Sequence[TokenTuple], mode: str, pal: Palette) -> tuple[str, list[str]]:
    """The text and one background per character, '' where Markdown syntax or indentation."""
    text = "".join(t for t, _s, _p in tokens)
    colours: list[str] = []
    for t, src, prob in tokens:
        colours.extend([token_colour(src, prob, mode, pal)] * len(t))
    pos = 0
    in_fence = False
    for line in text.split("\n"):
        end = pos + len(line)
        fence = _FENCE.match(line) is not None
        if fence:
            in_fence = not in_fence
        if _WHOLE_LINE.fullmatch(line):
            colours[pos:end] = [""] * len(line)
        elif in_fence:
            m = _INDENT.match(line)
            n = m.end() if m else 0
            colours[pos:pos + n] = [""] * n
        else:
            for i, ch in enumerate(line):
                if ch in _DELIMITERS:  # a marker inside ** or `` would split the run
                    colours[pos + i] = ""
            m = _LINE_PREFIX.match(line)
            n = m.end() if m else 0
            colours[pos:pos + n] = [""] * n
            if line.lstrip().startswith("|"):  # a table row: pipes and padding frame cells
                for i, ch in enumerate(line):
                    if ch in "| \t":
                        colours[pos + i] = ""
            for link in _LINK_TARGET.finditer(line):
                colours[pos + link.start():pos + link.end()] = [""] * (link.end() - link.start())
        if end < len(colours):
            colours[end] = ""  # the newline
        pos = end + 1
    return text, colours


@dataclass
class Rendered:
    html: str
    code_blocks: list[str] = field(default_factory=list)  # the code of each block, for Copy


def _lexer(code: str, lang: str) -> Lexer:
    opts = {"stripnl": False, "ensurenl": False}
    if lang:
        try:
            return get_lexer_by_name(lang, **opts)
        except ClassNotFound:
            pass
    try:
        if len(code) > 40:
            lexer = guess_lexer(code, **opts)
            return lexer
    except ClassNotFound:
        pass
    return TextLexer(**opts)


class _Renderer:
    def __init__(self, pal: Palette, palette_list: list[str]) -> None:
        self.pal = pal
        self.colours = palette_list
        self.blocks: list[str] = []
        self.style = get_style_by_name(pal.code_style)
        self.md = MarkdownIt("commonmark", {"html": False}).enable("table")
        me = self

        def fence(_renderer, tokens, idx, _options, _env) -> str:  # type: ignore[no-untyped-def]
            return me._fence(tokens[idx].info or "", tokens[idx].content)

        self.md.add_render_rule("fence", fence)
        self.md.add_render_rule("code_block", fence)

    def _fence(self, info: str, content: str) -> str:
        lang = _MARKER.sub("", info).strip().split(" ")[0]
        code, bgs = self._unmark(content.rstrip("\n"))
        n = len(self.blocks)
        self.blocks.append(code)
        fg: list[tuple[str, bool]] = []
        for ttype, value in _lexer(code, lang).get_tokens(code):
            s = self.style.style_for_token(ttype)
            fg.extend([(f"#{s['color']}" if s["color"] else "", bool(s["bold"]))] * len(value))
        fg.extend([("", False)] * (len(code) - len(fg)))
        out: list[str] = []
        run: list[str] = []
        key: tuple[str, bool, str] | None = None

        def flush() -> None:
            if not run or key is None:
                return
            colour, bold, bg = key
            style = ";".join(x for x in (f"color:{colour}" if colour else "",
                                         "font-weight:bold" if bold else "",
                                         f"background-color:{bg}" if bg else "") if x)
            text = html.escape("".join(run))
            out.append(f'<span style="{style}">{text}</span>' if style else text)
            run.clear()

        for ch, (colour, bold), bg in zip(code, fg, bgs, strict=True):
            k = (colour, bold, bg)
            if k != key:
                flush()
                key = k
            run.append(ch)
        flush()
        label = html.escape(lang or "code")
        return (
            f'<table width="100%" cellpadding="6" cellspacing="0" bgcolor="{self.pal.code_bg}">'
            f'<tr><td><span style="color:{self.pal.muted}">{label}</span></td>'
            f'<td align="right"><a href="copy:{n}" style="color:{self.pal.chart_rate}">Copy</a></td></tr>'
            f'<tr><td colspan="2"><pre style="margin:0; white-space:pre-wrap">{"".join(out)}</pre></td></tr>'
            "</table><br>"
        )

    def _unmark(self, marked: str) -> tuple[str, list[str]]:
        """Code without markers, and each character's background."""
        chars: list[str] = []
        bgs: list[str] = []
        current = ""
        leading = True  # still in the line's indentation
        for ch in marked:
            o = ord(ch)
            if ch == END:
                current = ""
            elif START_BASE <= o < START_BASE + len(self.colours):
                current = self.colours[o - START_BASE]
            else:
                chars.append(ch)
                leading = ch == "\n" or (leading and ch in " \t")
                bgs.append("" if leading else current)
        return "".join(chars), bgs


def _mark(text: str, colours: list[str], palette_list: list[str]) -> str:
    out: list[str] = []
    current = ""
    for ch, colour in zip(text, colours, strict=True):
        if colour != current:
            if current:
                out.append(END)
            if colour:
                if colour not in palette_list:
                    palette_list.append(colour)
                out.append(chr(START_BASE + palette_list.index(colour)))
            current = colour
        out.append(ch)
    if current:
        out.append(END)
    return "".join(out)


def _spans(marked_html: str, palette_list: list[str]) -> str:
    """Markers -> background spans, closed before and reopened after every tag."""
    out: list[str] = []
    colour = ""
    i, n = 0, len(marked_html)
    while i < n:
        ch = marked_html[i]
        if ch == "<":
            j = marked_html.find(">", i)
            j = n - 1 if j < 0 else j
            if colour:
                out.append("</span>")
            out.append(_MARKER.sub("", marked_html[i:j + 1]))
            if colour:
                out.append(f'<span style="background-color:{colour}">')
            i = j + 1
            continue
        o = ord(ch)
        if ch == END or START_BASE <= o < START_BASE + len(palette_list):
            if colour:
                out.append("</span>")
            colour = "" if ch == END else palette_list[o - START_BASE]
            if colour:
                out.append(f'<span style="background-color:{colour}">')
        else:
            out.append(ch)
        i += 1
    if colour:
        out.append("</span>")
    return "".join(out)


def render_reply(tokens: Sequence[TokenTuple], text: str, mode: str, pal: Palette) -> Rendered:
    """The reply as HTML: Markdown, code blocks and, unless ``mode`` is off, token colours.

    ``text`` is the reply's final text; when it differs from the joined tokens
    (older messages have no tokens), the part the tokens do not cover is uncoloured.
    """
    joined = "".join(t for t, _s, _p in tokens)
    if joined != text:
        tokens = [*tokens, (text[len(joined):], "t", None)] if text.startswith(joined) \
            else [(text, "t", None)]
    plain, colours = char_colours(tokens, mode, pal)
    palette_list: list[str] = []
    marked = _mark(plain, colours, palette_list)
    r = _Renderer(pal, palette_list)
    body = r.md.render(marked)
    return Rendered(_spans(body, palette_list), r.blocks)
