"""The settings page: theme, load options, model folders, the local server, speculative defaults.

Changes are saved at once (typed settings, JSON). Load options (context
length, GPU layers, threads) apply the next time a model is loaded; once they
differ from what the loaded models were loaded with, the page says so and
offers "Reload now".
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specula.core import paths
from specula.gui.chat.settings_panel import SpecForm, spin
from specula.gui.context import AppContext
from specula.gui.load_options import LoadOptions, apply_choice
from specula.gui.settings.model_folders import ModelFolders
from specula.server import DEFAULT_PORT

APPLY_NOTE = "Context length, GPU layers and threads apply when a model is next loaded."
STALE_NOTE = ("Changed since the loaded models were loaded: they apply at the next load, "
              "or reload now.")


class SettingsPage(QScrollArea):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWidgetResizable(True)
        inner = QWidget()
        lay = QVBoxLayout(inner)
        lay.setContentsMargins(32, 20, 32, 20)
        s = ctx.settings

        look = QGroupBox("Appearance")
        form = self._form(look)
        self.theme = QComboBox()
        self.theme.addItem("Dark", "dark")
        self.theme.addItem("Light", "light")
        self.theme.addItem("System", "system")
        self.theme.setToolTip("System: light or dark as the desktop is, following its changes")
        self.theme.setCurrentIndex(max(self.theme.findData(s.theme), 0))
        self.theme.setMinimumWidth(160)
        form.addRow("Theme", self.theme)
        lay.addWidget(look)

        engine = QGroupBox("Loading models")
        form = self._form(engine)
        self.load_options = LoadOptions(s.n_ctx, s.n_gpu_layers_target, s.n_gpu_layers_draft,
                                        ctx.engine.target_info, ctx.engine.draft_info)
        self.n_ctx = self.load_options.n_ctx
        self.gpu_draft = self.load_options.draft_layers
        form.addRow(self.load_options)
        self.threads = spin(0, 256, s.n_threads, "0 = choose automatically")
        form.addRow("CPU threads (0 = auto)", self.threads)
        pending = QHBoxLayout()
        self.pending = QLabel(APPLY_NOTE)
        self.pending.setObjectName("Muted")
        self.pending.setWordWrap(True)
        pending.addWidget(self.pending, 1)
        self.reload_button = QPushButton("Reload now")
        self.reload_button.setToolTip("Load the current target and draft again with these options")
        self.reload_button.clicked.connect(self.reload_now)
        self.reload_button.setVisible(False)
        pending.addWidget(self.reload_button)
        form.addRow(pending)
        lay.addWidget(engine)
        self._loaded_with: tuple[int, ...] | None = None  # load_values() at the last load
        self._reload_draft = ""
        ctx.engine.target_loaded.connect(self._on_target_loaded)
        ctx.engine.draft_loaded.connect(self._on_models_changed)
        ctx.engine.draft_unloaded.connect(self._on_models_changed)

        self.folders = ModelFolders(ctx)
        lay.addWidget(self.folders)

        served = QGroupBox("Local server (OpenAI-compatible API)")
        form = self._form(served)
        self.serve = QCheckBox("Serve the loaded models to other apps on this machine")
        self.serve.setProperty("visibleBox", True)  # a box that shows in both themes
        self.serve.setToolTip(
            "GET /v1/models, POST /v1/chat/completions and /v1/completions on 127.0.0.1, "
            "with the same engine and speculative settings as the chat; requests queue with "
            "your own replies. Speculative statistics come back in a \"specula\" field.")
        form.addRow(self.serve)
        self.port = spin(1, 65535, s.server_port or DEFAULT_PORT, "TCP port on 127.0.0.1")
        form.addRow("Port", self.port)
        self.serve_status = QLabel(ctx.server.message)
        self.serve_status.setObjectName("Muted")
        self.serve_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.serve_status)
        lay.addWidget(served)
        self.serve.toggled.connect(self._toggle_server)
        ctx.server.state_changed.connect(self._server_state)
        self._server_state(ctx.server.running, ctx.server.message)

        spec = QGroupBox("Default speculative settings")
        spec_lay = QVBoxLayout(spec)
        self.spec = SpecForm(s.speculative)
        self.spec.setMaximumWidth(420)
        spec_lay.addWidget(self.spec)
        lay.addWidget(spec)

        where = QLabel(f"Settings file: {s.path()}\nConversations: {paths.data_dir()}")
        where.setObjectName("Muted")
        lay.addWidget(where)
        lay.addStretch(1)
        self.setWidget(inner)

        self.theme.currentIndexChanged.connect(self.save)
        self.threads.valueChanged.connect(self.save)
        self.load_options.options_changed.connect(self.save)
        self.spec.changed.connect(self.save)

    # -- load options ------------------------------------------------------------------
    def _on_target_loaded(self, _info: object) -> None:
        self._loaded_with = self.load_values()
        self._on_models_changed()
        if self._reload_draft:
            path, self._reload_draft = self._reload_draft, ""
            self.ctx.load_requested.emit("draft", path)

    def _on_models_changed(self, *_args: object) -> None:
        self.load_options.set_models(self.ctx.engine.target_info, self.ctx.engine.draft_info)
        self._show_pending()

    def _show_pending(self) -> None:
        stale = self.ctx.engine.has_target and self._loaded_with is not None and \
            self._loaded_with != self.load_values()
        self.pending.setText(STALE_NOTE if stale else APPLY_NOTE)
        self.reload_button.setVisible(stale)

    def load_values(self) -> tuple[int, ...]:
        """The settings a load is built with: context, threads, target and draft layers."""
        s = self.ctx.settings
        return (s.n_ctx, s.n_threads, s.n_gpu_layers_target, s.n_gpu_layers_draft)

    def reload_now(self) -> None:
        """Load the current target (then its draft) again, so the new options apply."""
        e = self.ctx.engine
        if e.target_info is None:
            return
        self._reload_draft = e.draft_info.source if e.draft_info else ""
        self.reload_button.setVisible(False)
        self.ctx.load_requested.emit("target", e.target_info.source)

    def _toggle_server(self, on: bool) -> None:
        if on:
            self.ctx.server.start(self.port.value())
        else:
            self.ctx.server.stop()

    def _server_state(self, running: bool, message: str) -> None:
        self.serve_status.setText(message)
        self.port.setEnabled(not running)
        server = self.ctx.server.server
        if running and server is not None and self.port.value() != server.port:
            self.port.blockSignals(True)
            self.port.setValue(server.port)  # started from the chat's chip or at start
            self.port.blockSignals(False)
        if self.serve.isChecked() != running:
            self.serve.blockSignals(True)
            self.serve.setChecked(running)
            self.serve.blockSignals(False)

    @staticmethod
    def _form(box: QGroupBox) -> QFormLayout:
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        return form

    def save(self) -> None:
        s = self.ctx.settings
        s.theme = str(self.theme.currentData())
        s.n_threads = self.threads.value()
        apply_choice(s, self.load_options.choice())
        s.speculative = self.spec.values()
        self.ctx.save_settings()
        self._show_pending()
