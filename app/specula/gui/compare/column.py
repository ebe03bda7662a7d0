"""One side of the compare page: a title, the reply (coloured like the chat), its rate and footer.

The reply pane takes all the height the page leaves it and scrolls; the text
is rendered by the chat's renderer so a reply looks the same on both pages
(accepted draft tokens coloured, or Markdown when colouring is off).
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from specula.core.engine.events import Done
from specula.gui import theme
from specula.gui.chat.render import (
    SOURCE_LETTER,
    TokenTuple,
    markdown_html,
    plain_html,
    tokens_html,
)
from specula.gui.engine_worker import ReplyBatch
from specula.gui.stats.footer import footer_text

_MD = MarkdownIt("commonmark")


def reply_html(tokens: list[TokenTuple], text: str, colour_mode: str) -> str:
    """The chat's rendering of a reply: coloured tokens, or Markdown when colouring is off."""
    pal = theme.palette()
    if colour_mode != "off" and tokens:
        return tokens_html(tokens, colour_mode, pal)
    return markdown_html(text, pal) if text else plain_html("…")


class Column(QFrame):
    """One run's reply: streamed tokens while it runs, the engine's final text after."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        self.title = QLabel(title)
        self.title.setObjectName("PanelTitle")
        head.addWidget(self.title, 1)
        self.rate = QLabel("–")
        self.rate.setObjectName("CompareRate")
        self.rate.setToolTip("This side's rate over all its runs: tokens after the first "
                             "over the time after the first token")
        head.addWidget(self.rate)
        lay.addLayout(head)
        self.body = QTextBrowser(self)
        self.body.setObjectName("CompareBody")
        self.body.setOpenLinks(False)  # copy:N copies code block N; other links open outside
        self.body.anchorClicked.connect(self._on_link)
        self.body.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        lay.addWidget(self.body, 1)
        self.footer = QLabel("")
        self.footer.setObjectName("Footer")
        self.footer.setWordWrap(True)
        # two lines on both sides, so the panes end at the same height
        self.footer.setMinimumHeight(2 * self.footer.fontMetrics().lineSpacing())
        self.footer.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.footer)
        self.text = ""
        self.tokens: list[TokenTuple] = []
        self.colour_mode = "source"

    def code_blocks(self) -> list[str]:
        """The reply's fenced and indented code blocks, in order (what copy:N refers to)."""
        return [t.content for t in _MD.parse(self.text) if t.type in ("fence", "code_block")]

    def _on_link(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            blocks = self.code_blocks()
            i = int(url.path()) if url.path().isdigit() else -1
            if 0 <= i < len(blocks):
                QGuiApplication.clipboard().setText(blocks[i])
        else:
            QDesktopServices.openUrl(url)

    def reset(self, note: str = "waiting…") -> None:
        self.text = ""
        self.tokens = []
        self.body.setHtml(plain_html("…"))
        self.footer.setText(note)

    def add(self, batch: ReplyBatch) -> None:
        for ev in batch.tokens:
            src = "r" if ev.relaxed else SOURCE_LETTER.get(ev.source.value, "t")
            self.tokens.append((ev.text, src, ev.draft_prob))
            self.text += ev.text
        self.render()
        self.footer.setText("generating…")

    def render(self) -> None:
        bar = self.body.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        self.body.setHtml(reply_html(self.tokens, self.text, self.colour_mode))
        if at_end:
            bar.setValue(bar.maximum())

    def finish(self, done: Done, pooled_rate: str) -> None:
        """Show the final text; the big figure is the side's rate over all its runs."""
        if not self.tokens or "".join(t[0] for t in self.tokens) != done.text:
            self.tokens = []  # the engine's text wins when the pieces disagree
        self.text = done.text
        self.render()
        self.rate.setText(pooled_rate)
        self.footer.setText("Last run: " + footer_text(done.stats.to_dict(), done.stop_reason.value))
