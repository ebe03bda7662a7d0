"""Copy says "Copied": the message's button and a code block's link show it for a moment.

Why: a click that copies silently leaves the user unsure whether it worked
(the code-block Copy gave no feedback at all).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QAbstractButton, QTextBrowser

COPIED = "Copied"
SHOWN_MS = 1500


def flash_button(button: QAbstractButton) -> None:
    """The button reads "Copied" for a moment, then its own label again."""
    label = button.property("idle_text") or button.text()
    button.setProperty("idle_text", label)
    button.setText(COPIED)
    QTimer.singleShot(SHOWN_MS, button, lambda: button.setText(str(label)))


def copied_html(html: str, block: int) -> str:
    """``html`` with code block ``block``'s Copy link reading "Copied"."""
    return re.sub(rf'(<a href="copy:{block}"[^>]*>)Copy(</a>)', rf"\g<1>{COPIED}\g<2>", html)


def flash_block(view: QTextBrowser, html: str, block: int) -> None:
    """Show ``html`` with block ``block`` marked copied, and ``html`` again a moment later
    (unless the view was re-rendered meanwhile: its ``html`` attribute is what it last
    rendered)."""
    marked = copied_html(html, block)
    if marked == html:
        return
    view.setHtml(marked)

    def restore() -> None:
        if getattr(view, "html", html) == html:  # not re-rendered since (view.html: its last)
            view.setHtml(html)

    QTimer.singleShot(SHOWN_MS, view, restore)
