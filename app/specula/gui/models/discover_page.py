"""Discover: search the hub, see a repository's GGUF files with fit and compatibility badges.

Before any search the page suggests pairs (a target with the draft that suits
it, from the library and the hub's most downloaded) to load or download in
one click. Typing searches after a short pause and cancels the search before it;
selecting a repository lists its files, then reads each file's header from
the hub (HTTP ranges, cached in memory and on disk) to fill the badges. The
fit badge treats the file as the target with the current draft at the chosen
context length; the compatibility badge compares it with the loaded target.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import HubClient, RepoListing, RepoSummary
from specula.core.hub.partial_files import local_path
from specula.core.pairing.badges import plural
from specula.core.pairing.drafts import same_file
from specula.gui.context import AppContext
from specula.gui.elided import ElidedLabel
from specula.gui.models.drafts_panel import DraftsPanel
from specula.gui.models.file_badges import HeaderKey, badge_files, download_state
from specula.gui.models.heads_panel import HeadsPanel
from specula.gui.models.repo_files_view import FileRow, RepoFilesModel, RepoFilesView
from specula.gui.models.search_model import REPO_ROLE, SearchResultsModel
from specula.gui.models.suggestions_panel import SuggestionsPanel
from specula.gui.models.widgets import muted, search_box, set_tone
from specula.gui.page_header import page_layout
from specula.gui.tasks import Task, TaskContext, TaskError, start_task

SEARCH_DELAY_MS = 350


class DiscoverPage(QWidget):
    search_finished = Signal(int)
    """A search returned this many repositories."""
    files_listed = Signal(str)
    """A repository's files were listed (its id); header reads follow."""
    headers_read = Signal(str)
    """Every header of the shown repository was read and badged (its id)."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.headers: dict[HeaderKey, ModelInfo] = {}  # remote headers read this session
        self.header_errors: dict[HeaderKey, str] = {}
        self.gpu_free: list[int] | None = None
        self.listing: RepoListing | None = None
        self._search_task: Task | None = None
        self._files_task: Task | None = None
        self._header_task: Task | None = None

        outer, head = page_layout(self, "Discover")
        self.search = search_box("Search GGUF models on the hub (e.g. qwen coder)…", self)
        head.addWidget(self.search, 1)
        head.addWidget(QLabel("Context", self))
        self.n_ctx = QSpinBox(self)
        self.n_ctx.setRange(256, 1_048_576)
        self.n_ctx.setSingleStep(2048)
        self.n_ctx.setValue(ctx.settings.n_ctx)
        self.n_ctx.setSuffix(" tokens")
        self.n_ctx.setToolTip("The context length the fit badges assume")
        head.addWidget(self.n_ctx)

        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self._results_side())
        split.addWidget(self._repo_side())
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([540, 760])
        outer.addWidget(split, 1)
        self.splitter = split

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(SEARCH_DELAY_MS)
        self._debounce.timeout.connect(self.run_search)
        self.search.textChanged.connect(self._on_text)
        self.search.returnPressed.connect(self.run_search)
        self.n_ctx.valueChanged.connect(lambda _v: self.rebadge())
        engine = ctx.engine
        for sig in (engine.target_loaded, engine.draft_loaded, engine.draft_unloaded):
            sig.connect(lambda *_a: self.rebadge())
        engine.target_loaded.connect(self.drafts.set_loaded)
        engine.target_loaded.connect(self._heads_for)
        engine.target_unloaded.connect(lambda: self.heads.set_target(None))
        self._heads_for(engine.target_info)
        engine.target_loaded.connect(lambda _i: self._suggested and self.suggest())
        ctx.downloads.download_finished.connect(lambda *_a: self._mark_local())
        ctx.library.scanned.connect(lambda _models: self._on_library_changed())

    def _results_side(self) -> QWidget:
        w = QWidget(self)
        lay = QVBoxLayout(w)
        lay.setContentsMargins(0, 0, 8, 0)
        self.search_status = muted("Type to search the hub.", w)
        lay.addWidget(self.search_status)
        self.suggestions = SuggestionsPanel(w)
        self.suggestions.load_requested.connect(self._load_pair)
        self.suggestions.download_requested.connect(self._download_draft)
        lay.addWidget(self.suggestions, 1)
        self.heads = HeadsPanel(w)  # EAGLE-3 / DFlash / DSpark heads for the loaded target
        self.heads.download_requested.connect(self._download_draft)
        lay.addWidget(self.heads)
        self._suggested = False  # worked out the first time the page is shown
        self.results_model = SearchResultsModel(self)
        self.results = QTableView(w)
        self.results.setObjectName("SearchResults")
        self.results.setModel(self.results_model)
        self.results.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.results.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.results.verticalHeader().hide()
        self.results.setShowGrid(False)
        self.results.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.results.setWordWrap(False)  # a wrapped name is cut at its end, not its middle
        header = self.results.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.results.selectionModel().currentRowChanged.connect(self._on_repo_selected)
        lay.addWidget(self.results, 1)
        self.results.hide()  # until a search
        return w

    def _repo_side(self) -> QWidget:
        w = QWidget(self)
        lay = QVBoxLayout(w)
        lay.setContentsMargins(8, 0, 0, 0)
        self.repo_title = ElidedLabel("", w)
        self.repo_title.setObjectName("RepoTitle")
        lay.addWidget(self.repo_title)
        self.description = muted("", w)
        lay.addWidget(self.description)
        self.files_status = QLabel("", w)
        self.files_status.setWordWrap(True)
        lay.addWidget(self.files_status)
        self.files_model = RepoFilesModel(self)
        self.files = RepoFilesView(self.files_model, w)
        self.files.selectionModel().currentRowChanged.connect(self._on_file_selected)
        self.files.doubleClicked.connect(lambda _i: self.download_selected())
        lay.addWidget(self.files, 2)
        row = QHBoxLayout()
        self.download_button = QPushButton("Download", w)
        self.download_button.setObjectName("Primary")
        self.download_button.setEnabled(False)
        self.download_button.clicked.connect(self.download_selected)
        row.addWidget(self.download_button)
        self.download_hint = QLabel("", w)
        self.download_hint.setObjectName("Muted")
        row.addWidget(self.download_hint, 1)
        lay.addLayout(row)
        self.drafts = DraftsPanel(w)
        self.drafts.loaded = self.ctx.engine.target_info
        self.drafts.download_requested.connect(self._download_draft)
        self.drafts.load_requested.connect(self._load_draft)
        lay.addWidget(self.drafts, 2)
        return w

    # -- search ---------------------------------------------------------------------------
    def _on_text(self, _text: str) -> None:
        if self._search_task is not None:
            self._search_task.cancel()  # typing again drops the search in flight
        self._debounce.start()

    def run_search(self) -> None:
        self._debounce.stop()
        if self._search_task is not None:
            self._search_task.cancel()
        text = self.search.text().strip()
        self.results.setVisible(bool(text))
        self.suggestions.setVisible(not text)
        if not text:
            self.results_model.set_results([])
            self.search_status.setText("Type to search the hub.")
            return
        set_tone(self.search_status, "Muted")
        self.search_status.setText(f"Searching for “{text}”…")

        def work(ctx: TaskContext) -> list[RepoSummary]:
            return HubClient().search(text, limit=50)

        self._search_task = start_task(self, work, on_done=self._on_results,
                                       on_failed=lambda e: self._show_error(self.search_status, e))

    def _on_results(self, results: list[RepoSummary]) -> None:
        self.results_model.set_results(results)
        text = self.search.text().strip()
        self.search_status.setText(f"{plural(len(results), 'GGUF repository', 'GGUF repositories')}"
                                   f" match{'es' if len(results) == 1 else ''} “{text}”."
                                   if results else f"No GGUF repository matches “{text}”.")
        self.search_finished.emit(len(results))

    # -- a repository ---------------------------------------------------------------------------
    def _on_repo_selected(self, current: QModelIndex, _prev: QModelIndex) -> None:
        summary = current.data(REPO_ROLE) if current.isValid() else None
        if isinstance(summary, RepoSummary):
            self.open_repo(summary.repo_id)

    def open_repo(self, repo_id: str) -> None:
        for task in (self._files_task, self._header_task):
            if task is not None:
                task.cancel()
        self.listing = None
        self.files_model.set_models([])
        self.drafts.clear("Select a file to see which drafts suit it.")
        self.drafts.setProperty("shown_for", "")
        self.repo_title.setText(repo_id)
        self.description.setText("")
        set_tone(self.files_status, "Muted")
        self.files_status.setText("Listing the repository's files…")

        def work(ctx: TaskContext) -> RepoListing:
            return HubClient().list_files(repo_id)

        self._files_task = start_task(self, work, on_done=self._on_listing,
                                      on_failed=lambda e: self._show_error(self.files_status, e))

    def _on_listing(self, listing: RepoListing) -> None:
        self.listing = listing
        self.description.setText(listing.description or "No model card description.")
        if not listing.models:
            self.files_status.setText("This repository has no GGUF files.")
        self.files_model.set_models(listing.models, self._local_files(listing))
        self.files_listed.emit(listing.repo_id)
        if listing.models:
            self.files.selectRow(0)
        self.rebadge()

    def _local_files(self, listing: RepoListing) -> set[str]:
        """The listing's files already in the library: downloaded here, or the same file
        (name and size) in any library folder."""
        models_dir = self.ctx.library.models_dir
        have = {same_file(m.name, m.size) for m in self.ctx.library.models}
        return {m.filename for m in listing.models
                if local_path(models_dir, listing.repo_id, m.filename).exists()
                or same_file(m.filename, m.total_size) in have}

    def _mark_local(self) -> None:
        if self.listing is not None:
            local = self._local_files(self.listing)
            for row in self.files_model.rows:
                row.local = row.model.filename in local
            self.files_model.layoutChanged.emit()
            self._update_download_button()

    # -- headers and badges -------------------------------------------------------------------
    def rebadge(self) -> None:
        """Read the missing headers and (re)compute every badge, in the background."""
        listing = self.listing
        if listing is None or not listing.models:
            return
        if self._header_task is not None:
            self._header_task.cancel()
        self.files_model.mark_busy()
        engine = self.ctx.engine
        target, draft = engine.target_info, engine.draft_info
        self.files_model.set_loaded_name(target.display_name if target else "")
        n = len(listing.models)
        against = (f"compatibility against {target.display_name} (loaded target)" if target
                   else "no target loaded: load one on the chat page to check compatibility")
        set_tone(self.files_status, "Muted")
        self.files_status.setText(f"{plural(n, 'GGUF model')} · {against}")
        n_ctx = self.n_ctx.value()
        cache, errors = dict(self.headers), dict(self.header_errors)
        gpu_known = self.gpu_free
        repo_id = listing.repo_id
        models = list(listing.models)

        def work(ctx: TaskContext) -> list[int]:
            return badge_files(repo_id, models, cache, errors, target=target, draft=draft,
                               n_ctx=n_ctx, gpu_known=gpu_known, check=ctx.check, emit=ctx.emit)

        self._header_task = start_task(self, work, on_item=self._on_header,
                                       on_done=lambda gpu: self._on_headers_done(repo_id, gpu),
                                       on_failed=lambda e: self._show_error(self.files_status, e))

    def _on_header(self, item: tuple[HeaderKey, ModelInfo | None, object, str | None]) -> None:
        key, info, badges, error = item
        if info is not None:
            self.headers[key] = info
        elif error is not None:
            self.header_errors[key] = error
        if self.listing is not None and key[0] == self.listing.repo_id:
            self.files_model.set_info(key[1], info, badges, error)  # type: ignore[arg-type]
            row = self.files.selected_row()
            if row is not None and row.model.filename == key[1] and info is not None:
                self._show_drafts(row)

    def _on_headers_done(self, repo_id: str, gpu: list[int]) -> None:
        self.gpu_free = gpu
        self.headers_read.emit(repo_id)

    # -- a file -----------------------------------------------------------------------------------
    def _on_file_selected(self, _current: QModelIndex, _prev: QModelIndex) -> None:
        self._update_download_button()
        row = self.files.selected_row()
        if row is not None and row.info is not None:
            self._show_drafts(row)
        elif row is not None:
            self.drafts.clear("Waiting for the file's header…")

    def _show_drafts(self, row: FileRow) -> None:
        if row.info is None or self.listing is None:
            return
        shown = self.drafts.property("shown_for")
        key = f"{self.listing.repo_id}/{row.model.filename}"
        if shown == key:
            return
        self.drafts.setProperty("shown_for", key)
        self.drafts.show_for(row.info, self.listing.repo_id, list(self.ctx.library.models))

    def _update_download_button(self) -> None:
        row = self.files.selected_row()
        running = row is not None and self.listing is not None and \
            self.ctx.downloads.is_running(self.listing.repo_id, row.model.filename)
        ok, hint = download_state(row if self.listing is not None else None, running,
                                  self.ctx.library.models_dir)
        self.download_button.setEnabled(ok)
        self.download_hint.setText(hint)

    def download_selected(self) -> None:
        row = self.files.selected_row()
        if row is None or self.listing is None or not self.download_button.isEnabled():
            return
        self.ctx.downloads.start(self.listing.repo_id, row.model.filename, row.model.total_size)
        self._update_download_button()

    def _download_draft(self, repo_id: str, filename: str, size: int) -> None:
        self.ctx.downloads.start(repo_id, filename, size or None)

    # -- suggestions --------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._suggested:
            self.suggest()

    def suggest(self) -> None:
        """Work the suggested pairs out again (library, loaded target and hub)."""
        self._suggested = True
        self.suggestions.refresh(list(self.ctx.library.models), self.ctx.engine.target_info,
                                 self.ctx.library.models_dir)

    def _heads_for(self, target: ModelInfo | None) -> None:
        """The heads panel looks for the loaded target's heads (its repository's name, when
        it came from the hub, is the better search)."""
        model = self.ctx.library.find(target.source) if target is not None else None
        self.heads.set_target(target, model.repo_id if model is not None else None)

    def _load_pair(self, target: str, draft: str) -> None:
        self.ctx.load_requested.emit("target", target)
        self.ctx.load_requested.emit("draft", draft)
        self.ctx.page_requested.emit("chat")

    def _load_draft(self, path: str) -> None:
        self.ctx.load_requested.emit("draft", path)
        self.ctx.page_requested.emit("chat")

    def _on_library_changed(self) -> None:
        """A download landed (or a file went): list the drafts again, each file once."""
        self._mark_local()
        if self._suggested:
            self.suggest()
        row = self.files.selected_row()
        self.drafts.setProperty("shown_for", "")
        if row is not None and row.info is not None:
            self._show_drafts(row)

    # -- errors --------------------------------------------------------------------------------------
    def _show_error(self, label: QLabel, error: TaskError) -> None:
        set_tone(label, "ErrorLabel")
        label.setText(error.message)
