"""The settings page: engine options, theme and default speculative settings.

Changes are saved at once (typed settings, JSON); engine options apply the
next time a target is loaded.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specula.core import paths
from specula.gui.chat.settings_panel import SpecForm, spin
from specula.gui.context import AppContext
from specula.gui.settings.model_folders import ModelFolders
from specula.server import DEFAULT_PORT


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
        self.theme.setCurrentIndex(max(self.theme.findData(s.theme), 0))
        self.theme.setMinimumWidth(160)
        form.addRow("Theme", self.theme)
        lay.addWidget(look)

        engine = QGroupBox("Engine (applies when a model is next loaded)")
        form = self._form(engine)
        self.threads = spin(0, 256, s.n_threads, "0 = choose automatically")
        form.addRow("CPU threads (0 = auto)", self.threads)
        self.n_ctx = spin(256, 262144, s.n_ctx, "Context window in tokens")
        self.n_ctx.setSingleStep(1024)
        form.addRow("Context length", self.n_ctx)
        self.gpu_target = spin(-1, 999, s.n_gpu_layers_target, "-1 = all layers, 0 = CPU only")
        form.addRow("GPU layers, target", self.gpu_target)
        self.gpu_draft = spin(-1, 999, s.n_gpu_layers_draft, "-1 = all layers, 0 = CPU only")
        form.addRow("GPU layers, draft", self.gpu_draft)
        lay.addWidget(engine)

        self.folders = ModelFolders(ctx)
        lay.addWidget(self.folders)

        served = QGroupBox("Local server (OpenAI-compatible API)")
        form = self._form(served)
        self.serve = QCheckBox("Serve the loaded models to other apps on this machine")
        self.serve.setToolTip(
            "GET /v1/models, POST /v1/chat/completions and /v1/completions on 127.0.0.1, "
            "with the same engine and speculative settings as the chat; requests queue with "
            "your own replies. Speculative statistics come back in a \"specula\" field.")
        form.addRow(self.serve)
        self.port = spin(1, 65535, DEFAULT_PORT, "TCP port on 127.0.0.1")
        form.addRow("Port", self.port)
        self.serve_status = QLabel("Local server off.")
        self.serve_status.setObjectName("Muted")
        self.serve_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.serve_status)
        lay.addWidget(served)
        self.serve.toggled.connect(self._toggle_server)
        ctx.server.state_changed.connect(self._server_state)

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
        for w in (self.threads, self.n_ctx, self.gpu_target, self.gpu_draft):
            w.valueChanged.connect(self.save)
        self.spec.changed.connect(self.save)

    def _toggle_server(self, on: bool) -> None:
        if on:
            self.ctx.server.start(self.port.value())
        else:
            self.ctx.server.stop()

    def _server_state(self, running: bool, message: str) -> None:
        self.serve_status.setText(message)
        self.port.setEnabled(not running)
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
        s.n_ctx = self.n_ctx.value()
        s.n_gpu_layers_target = self.gpu_target.value()
        s.n_gpu_layers_draft = self.gpu_draft.value()
        s.speculative = self.spec.values()
        self.ctx.save_settings()
