"""One view: Markdown and code blocks with the draft colouring inside them."""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication, QTextDocument

from specula.gui import theme
from specula.gui.chat.coloured_markdown import render_reply
from specula.gui.chat.message import MessageWidget

PAL = theme.PALETTES["dark"]
REPLY = (
    "# Title\n\nHere is **bold** text, `inline code` and a [link](https://example.org/a).\n\n"
    "- first item\n- second item\n\n1. one\n2. two\n\n> a quote\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "```python\ndef f(x):\n    if x:\n        return 1\n    return 2\n```\n\nDone.\n"
)


def _split(text: str, cuts: list[int], sources: list[str]) -> list[tuple[str, str, float | None]]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in pairwise(points) if b > a]
    return [(p, sources[i % len(sources)], 0.5) for i, p in enumerate(pieces)]


def _visible(html: str) -> str:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()


def test_code_reply_has_no_fences_a_label_and_colour_inside(qapp) -> None:  # type: ignore[no-untyped-def]
    tokens = [("Sure:\n\n", "t", None), ("```", "d", 0.9), ("python\n", "d", 0.9),
              ("def", "d", 0.9), (" f():\n", "t", None), ("    ", "d", 0.9),
              ("return", "d", 0.9), (" 1\n```\n", "t", None)]
    out = render_reply(tokens, "".join(t for t, _s, _p in tokens), "source", PAL)
    assert "```" not in _visible(out.html)
    assert ">python</span>" in out.html and 'href="copy:0"' in out.html
    assert out.code_blocks == ["def f():\n    return 1"]
    # 'def' keeps pygments' keyword colour and gets the draft background.
    assert re.search(r'<span style="color:#[0-9a-f]{6};background-color:' + PAL.draft_bg + r'">def<',
                     out.html)
    # The indentation token was accepted from the draft, but gets no box.
    assert f'background-color:{PAL.draft_bg}">    ' not in out.html
    assert f'background-color:{PAL.draft_bg}">return' in out.html


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, 10_000), max_size=80),
       sources=st.lists(st.sampled_from(["d", "t", "l", "r"]), min_size=1, max_size=6))
@example(cuts=[24], sources=["d", "t"])  # a token boundary inside the closing "**"
@example(cuts=[], sources=["d"])  # one coloured token: table pipes and cell padding
@example(cuts=[REPLY.index("python") + 2], sources=["t", "d"])  # inside the fence's language
def test_colouring_never_changes_what_markdown_shows(qapp, cuts, sources) -> None:  # type: ignore[no-untyped-def]
    """Wherever the tokens split and whatever their source, the rendered text is the same."""
    plain = render_reply([], REPLY, "off", PAL)
    coloured = render_reply(_split(REPLY, cuts, sources), REPLY, "source", PAL)
    assert _visible(coloured.html) == _visible(plain.html)
    assert coloured.code_blocks == plain.code_blocks
    assert coloured.html.count("<li>") == plain.html.count("<li>") == 4
    assert "<h1>" in coloured.html and "<table" in coloured.html and 'href="https://example.org/a"' in coloured.html


def test_copy_link_copies_the_block(qtbot) -> None:  # type: ignore[no-untyped-def]
    text = "A\n\n```sh\necho one\n```\n\n```\nplain two\n```\n"
    m = MessageWidget("assistant", text, [(text, "d", 0.9)])
    qtbot.addWidget(m)
    m.set_colour_mode("source")
    m.render()
    assert m.body.code_blocks == ["echo one", "plain two"]
    m.body.anchorClicked.emit(QUrl("copy:1"))
    assert QGuiApplication.clipboard().text() == "plain two"
    assert ">sh</span>" in m.body.toHtml() or "sh" in m.body.toPlainText()
