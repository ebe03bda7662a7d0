"""My Models: the library as a sortable, filterable table with a details pane.

The table is a :class:`QSortFilterProxyModel` over :class:`LibraryTableModel`;
the rows come from ``ctx.library`` (scanned in the background). Loading asks
the chat page through ``ctx.load_requested``; removal asks for confirmation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from specula.core.library.load_defaults import context_words
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import plural
from specula.core.pairing.pair_status import PairStatus, library_statuses
from specula.core.sizes import byte_size
from specula.gui.context import AppContext
from specula.gui.errors import show_error
from specula.gui.models.folder_offers import FolderOffers
from specula.gui.models.library_model import (
    MODEL_ROLE,
    LibraryFilterProxy,
    LibraryTableModel,
    model_folder,
)
from specula.gui.models.model_details import ModelDetails
from specula.gui.models.widgets import muted, search_box
from specula.gui.page_header import page_layout
from specula.gui.tasks import Task, TaskContext, start_task


def ask_yes_no(parent: QWidget, title: str, text: str) -> bool:
    answer = QMessageBox.question(parent, title, text,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


class LibraryPage(QWidget):
    library_shown = Signal(int)
    """The table was refilled after a scan: the number of models."""
    pairing_shown = Signal()
    """Each row was judged as the loaded target's draft (the "With target" column)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.library = ctx.library
        self.confirm: Callable[[QWidget, str, str], bool] = ask_yes_no  # tests replace it
        self.open_url: Callable[[QUrl], object] = QDesktopServices.openUrl
        outer, head = page_layout(self, "My Models")
        self.summary = muted("", self, wrap=False)
        head.addWidget(self.summary, 1)
        self.filter = search_box("Filter by name, architecture, quantization, folder…", self)
        self.filter.setMinimumWidth(320)
        head.addWidget(self.filter)
        self.rescan = QPushButton("Rescan", self)
        self.rescan.setToolTip("Look for new or removed files in every model folder")
        self.rescan.clicked.connect(self.library.rescan)
        head.addWidget(self.rescan)

        self.table_model = LibraryTableModel(self)
        self.proxy = LibraryFilterProxy(self)
        self.proxy.setSourceModel(self.table_model)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.table = QTableView(self)
        self.table.setObjectName("LibraryTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(0, 260)
        header.setStretchLastSection(True)
        # A name keeps its start (family and size: "qwen2.5-coder-0.5b-…"); the quantization
        # at its end has a column of its own.
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.table.doubleClicked.connect(lambda _i: self.details.load_target.click())

        self.details = ModelDetails(self)
        self.details.target = ctx.engine.target_info
        self.details.loads_with = self._loads_with
        self.details.n_ctx = lambda: ctx.settings.n_ctx
        ctx.engine.target_loaded.connect(lambda info: self.details.set_target(info))
        ctx.engine.target_loaded.connect(lambda _info: self._judge_pairing())
        ctx.engine.target_unloaded.connect(self._judge_pairing)
        self._pairing_task: Task | None = None
        self.details.load_requested.connect(self._load)
        self.details.remove_requested.connect(self.remove)
        self.details.reveal_requested.connect(self.reveal)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.table)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([930, 370])
        outer.addWidget(split, 1)
        self.splitter = split
        self.empty = self._empty_panel()
        outer.addWidget(self.empty, 1)

        self.library.scanned.connect(self._on_scanned)
        self.library.scan_failed.connect(
            lambda msg: show_error(self, "Specula: the library scan failed", msg))
        self.library.remove_failed.connect(
            lambda msg: show_error(self, "Specula: could not remove the model", msg))
        self._on_scanned(self.library.models)

    def _empty_panel(self) -> QWidget:
        """What an empty library shows: where models come from, and the folders found."""
        panel = QWidget(self)
        lay = QVBoxLayout(panel)
        lay.addStretch(1)
        title = QLabel("No models yet", panel)
        title.setObjectName("EmptyTitle")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(title)
        text = muted("Download a model in Discover, or add a folder of GGUF files you already "
                     "have: Specula uses them where they are.", panel)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(text)
        discover = QPushButton("Discover models", panel)
        discover.clicked.connect(lambda: self.ctx.page_requested.emit("discover"))
        lay.addWidget(discover, 0, Qt.AlignmentFlag.AlignHCenter)
        self.offers = FolderOffers(self.ctx, panel)
        lay.addWidget(self.offers)
        lay.addStretch(2)
        panel.hide()
        return panel

    # -- data ------------------------------------------------------------------------
    def _on_scanned(self, models: list[LocalModel]) -> None:
        current = self.selected()
        self.table_model.set_models(models)
        empty = not models and not self.library.scanning  # a first run: say where models come from
        self.empty.setVisible(empty)
        self.splitter.setVisible(not empty)
        total = sum(m.size for m in models)
        folders = len(self.library.library().roots)
        self.summary.setText(f"   {plural(len(models), 'model')} · {byte_size(total)} · "
                             f"{plural(folders, 'folder')}")
        if current is not None:
            self.select_path(str(current.path))
        elif self.proxy.rowCount() and self.isVisible():
            self.table.selectRow(0)
        else:
            self.details.show_model(self.selected(), models)
        self._judge_pairing()
        self.library_shown.emit(len(models))

    def _judge_pairing(self) -> None:
        """Mark each row as the loaded target's draft (the chat's picker's one judgement)."""
        if self._pairing_task is not None:
            self._pairing_task.cancel()
        target = self.ctx.engine.target_info
        if target is None:
            self.table_model.set_pairing({})
            return
        models, name = list(self.table_model.models), Path(target.source).name

        def work(task: TaskContext) -> dict[str, PairStatus]:
            return library_statuses(target, name, models, task.cancel_event)

        self._pairing_task = start_task(self, work, on_done=self._pairing_judged)

    def _pairing_judged(self, statuses: dict[str, PairStatus]) -> None:
        self.table_model.set_pairing(statuses)
        self.pairing_shown.emit()

    def selected(self) -> LocalModel | None:
        index = self.table.currentIndex()
        model = index.data(MODEL_ROLE) if index.isValid() else None
        return model if isinstance(model, LocalModel) else None

    def select_path(self, path: str) -> bool:
        for row in range(self.proxy.rowCount()):
            model = self.proxy.index(row, 0).data(MODEL_ROLE)
            if isinstance(model, LocalModel) and str(model.path) == path:
                self.table.selectRow(row)
                return True
        return False

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        model = current.data(MODEL_ROLE) if current.isValid() else None
        self.details.show_model(model if isinstance(model, LocalModel) else None,
                                self.table_model.models)

    # -- actions -------------------------------------------------------------------------
    def _loads_with(self, model: LocalModel) -> str:
        """The context ``model`` loads with: the engine's while it is the loaded target."""
        e = self.ctx.engine
        running = e.n_ctx if e.target_info is not None and \
            e.target_info.source == str(model.path) else 0
        trained = model.info.context_length if model.info is not None else None
        return context_words(model.path, self.ctx.settings.n_ctx, trained, running)

    def _load(self, kind: str, path: str) -> None:
        self.ctx.load_requested.emit(kind, path)
        self.ctx.page_requested.emit("chat")

    def remove(self, model: LocalModel) -> None:
        text = (f"Delete {model.name} ({byte_size(model.size)}) from {model_folder(model)}?"
                "\n\nThe file is removed from disk.")
        if self.confirm(self, "Remove model", text):
            self.library.remove(model)

    def reveal(self, model: LocalModel) -> None:
        self.open_url(QUrl.fromLocalFile(str(model_folder(model))))
