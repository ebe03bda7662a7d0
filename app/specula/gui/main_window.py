"""The shell: a navigation bar and a stack of pages. It navigates; pages own their widgets.

Adding a page is one line in :data:`PAGES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize, Qt
from PySide6.QtGui import QCloseEvent, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QWidget,
)

from specula.gui import errors
from specula.gui.chat.page import ChatPage
from specula.gui.compare.page import ComparePage
from specula.gui.context import AppContext
from specula.gui.downloads.page import DownloadsPage
from specula.gui.models.discover_page import DiscoverPage
from specula.gui.models.library_page import LibraryPage
from specula.gui.settings.page import SettingsPage
from specula.gui.shell_geometry import PREFERRED, first_geometry, inside
from specula.gui.shortcuts_help import ShortcutsHelp
from specula.gui.wheel_guard import install as install_wheel_guard


@dataclass(frozen=True)
class PageSpec:
    key: str
    title: str
    factory: Callable[[AppContext], QWidget]


PAGES: list[PageSpec] = [
    PageSpec("chat", "Chat", ChatPage),
    PageSpec("compare", "Compare", ComparePage),
    PageSpec("discover", "Discover", DiscoverPage),
    PageSpec("models", "My Models", LibraryPage),
    PageSpec("downloads", "Downloads", DownloadsPage),
    PageSpec("settings", "Settings", SettingsPage),
]


class MainWindow(QMainWindow):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        install_wheel_guard()
        self.setWindowTitle("Specula")
        central = QWidget(self)
        lay = QHBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.nav = QListWidget(central)
        self.nav.setObjectName("NavBar")
        self.nav.setFixedWidth(120)
        self.nav.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.nav.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.stack = QStackedWidget(central)
        self.pages: dict[str, QWidget] = {}
        for spec in PAGES:
            page = spec.factory(ctx)
            self.pages[spec.key] = page
            self.stack.addWidget(page)
            item = QListWidgetItem(spec.title)
            item.setData(Qt.ItemDataRole.UserRole, spec.key)
            item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
            self.nav.addItem(item)
            badge = getattr(page, "nav_badge_changed", None)
            if badge is not None:  # e.g. Downloads shows how many run, from every page
                badge.connect(lambda text, item=item, title=spec.title:
                              item.setText(f"{title} ({text})" if text else title))
        self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.nav.setCurrentRow(0)
        lay.addWidget(self.nav)
        lay.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        for i, _spec in enumerate(PAGES[:9]):
            QShortcut(QKeySequence(f"Ctrl+{i + 1}"), self, lambda i=i: self.nav.setCurrentRow(i))
        for keys in ("F1", "Ctrl+/"):
            QShortcut(QKeySequence(keys), self, self.show_shortcuts)
        QShortcut(QKeySequence("Ctrl+Q"), self, self.close,
                  context=Qt.ShortcutContext.ApplicationShortcut)  # quit (the window saves)
        self.shortcuts_help: ShortcutsHelp | None = None
        ctx.page_requested.connect(self.show_page)
        ctx.engine.notice.connect(self._show_data_notice)
        self._restore_geometry()

    def _show_data_notice(self, text: str) -> None:
        errors.show_data_notice(self, text)

    def show_page(self, key: str) -> QWidget:
        keys = [p.key for p in PAGES]
        self.nav.setCurrentRow(keys.index(key))
        return self.pages[key]

    def show_shortcuts(self) -> ShortcutsHelp:
        """The list of keyboard shortcuts over the window (F1, Ctrl+/)."""
        if self.shortcuts_help is None:
            self.shortcuts_help = ShortcutsHelp(self)
        self.shortcuts_help.show()
        return self.shortcuts_help

    @property
    def chat(self) -> ChatPage:
        page = self.pages["chat"]
        assert isinstance(page, ChatPage)
        return page

    def available_geometry(self) -> QRect | None:
        """The screen's area less panels and docks (None without a screen)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else None

    def _restore_geometry(self) -> None:
        """The size the window was left at, else the preferred size; inside the screen."""
        available = self.available_geometry()
        settings = QSettings()
        geometry, size = settings.value("window/geometry"), settings.value("window/size")
        restored = isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)
        if available is None:
            if not restored:
                self.resize(PREFERRED)
            return
        if self.isMaximized():
            return
        if isinstance(size, QSize) and size.isValid():  # our own record: Qt's is clipped to
            rect = QRect(self.geometry().topLeft(), size)  # the screen it finds at restore
        elif restored:
            rect = self.geometry()
        else:
            rect = first_geometry(available)
        self.setGeometry(inside(rect, available))

    def closeEvent(self, event: QCloseEvent) -> None:
        QSettings().setValue("window/geometry", self.saveGeometry())
        QSettings().setValue("window/size", self.size())
        super().closeEvent(event)
