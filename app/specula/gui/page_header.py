"""Every page's frame: its margins and a header row that starts with the page's title.

Why one builder: the pages (My Models, Discover, Downloads, Compare) built the
same margins, title label and header row each on their own; the header row is
where a page puts its summary, filter and buttons, after the title.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget


def page_layout(page: QWidget, title: str, *, title_role: str = "PageTitle"
                ) -> tuple[QVBoxLayout, QHBoxLayout]:
    """A page's outer layout and its header row, which starts with the page title
    (``title_role``: the theme's name for the title's style)."""
    outer = QVBoxLayout(page)
    outer.setContentsMargins(24, 16, 24, 16)
    head = QHBoxLayout()
    label = QLabel(title, page)
    label.setObjectName(title_role)
    head.addWidget(label)
    outer.addLayout(head)
    return outer, head
