"""What every page shares: settings, the conversation store and the engine client."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from specula.core.chat.conversations import ConversationStore
from specula.core.engine.engine import EngineOptions
from specula.core.settings import Settings
from specula.gui import theme
from specula.gui.downloads.manager import DownloadManager
from specula.gui.engine_client import EngineClient
from specula.gui.models.library_service import LibraryService
from specula.gui.server_host import ServerSwitch


class AppContext(QObject):
    settings_changed = Signal()
    """Settings were edited and saved; pages re-read what they show."""
    load_requested = Signal(str, str)
    """A page asked to load a model: kind (target | draft), path (the chat page loads it)."""
    page_requested = Signal(str)
    """A page asked the window to show another page (its key)."""
    library_folders_changed = Signal()
    """The models folder or the extra folders changed; the library is rescanned."""

    def __init__(self, settings: Settings | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or Settings.load()
        self.store = ConversationStore()
        self.engine = EngineClient(self)
        self.engine.configure(self.engine_options())
        self.library = LibraryService(self.settings, self)
        self.downloads = DownloadManager(self.library.models_dir, self)
        self.downloads.download_finished.connect(lambda *_a: self.library.rescan())
        self.library_folders_changed.connect(self.library.rescan)
        self.library.rescan()
        self.server = ServerSwitch(self.engine, self.settings.n_ctx, self, self.settings)

    def engine_options(self) -> EngineOptions:
        """The engine options the settings ask for (0 threads: let the engine choose)."""
        s = self.settings
        return EngineOptions(n_ctx=s.n_ctx, n_threads=s.n_threads or None,
                             n_gpu_layers_target=s.n_gpu_layers_target,
                             n_gpu_layers_draft=s.n_gpu_layers_draft)

    def save_settings(self) -> None:
        """Save, apply theme and engine options, and tell the pages."""
        self.settings.save()
        if theme.chosen() != self.settings.theme:
            theme.apply(self.settings.theme)
        self.engine.configure(self.engine_options())
        self.settings_changed.emit()

    def close(self) -> None:
        if self.server.running:
            self.server.stop(remember=False)  # it runs again at the next start
        self.downloads.shutdown()
        self.engine.shutdown()
        self.store.close()
