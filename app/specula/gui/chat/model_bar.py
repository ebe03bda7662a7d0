"""Top of the chat page: target and draft pickers, the draft switch, load progress.

Files come from a file dialog (opened in the models folder) and are
remembered in the settings' recent lists. Draft candidates are checked
against the chosen target in the background (headers only): compatible drafts
first, incompatible ones disabled with the reason as tooltip. Problems (a
refused draft, a failed load) go to the chat column's banner through
:attr:`ModelBar.problem`, never into this bar, so the bar keeps its height.
The speculative switch (:class:`SpecSwitch`) tells the truth about the next reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.engine.verdict import PolicyVerdict
from specula.core.gguf import compat_sentences
from specula.core.gguf.compat import CompatReport, check
from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.library.labels import ModelLabel, label_for
from specula.core.library.labels import describe as describe_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.choices import draft_choices
from specula.gui.chat.draft_offer import DraftOffer
from specula.gui.chat.load_gear import LoadGear
from specula.gui.chat.load_status import LoadStatus
from specula.gui.chat.spec_switch import RecheckButton, SpecSwitch
from specula.gui.context import AppContext
from specula.gui.elided import DETAIL_ROLE, ElidingCombo
from specula.gui.server_chip import ServerChip
from specula.gui.tasks import start_task

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
USABLE_ROLE = Qt.ItemDataRole.UserRole + 2
GGUF_FILTER = "GGUF models (*.gguf);;All files (*)"
# The picker's entry for a target that drafts with its own MTP layers (no file).
BUILTIN_MTP = "builtin:mtp"


MAX_REFUSED_SHOWN = 6  # library files listed as incompatible drafts (each costs a header read)


@dataclass
class DraftEntry:
    path: str
    name: str
    usable: bool
    reason: str
    short: str = ""  # why not, in one sentence the list shows (incompatible entries)
    detail: str = ""  # size and quantization, shown whole


def why_not(report: CompatReport) -> str:
    """The first reason a draft is refused, for the list: 'The two models use different
    kinds of tokenizer (and 2 more)' (no sentence stop inside the entry's brackets)."""
    sentences = compat_sentences.refusal_sentences(report)
    if not sentences:
        return report.reason().rstrip(".")
    more = len(sentences) - 1
    return sentences[0].rstrip(".") + (f" (and {more} more)" if more else "")


def _short(t_info: ModelInfo, path: str, reason: str) -> str:
    try:
        return why_not(check(t_info, read_model_info(path)))
    except Exception:  # unreadable: the reason already says so
        return reason.rstrip(".")


def check_drafts(target: str, drafts: list[str], library: list[LocalModel] | None = None
                 ) -> list[DraftEntry]:
    """The picker's entries, as :func:`specula.core.pairing.choices.draft_choices` decides them,
    and the library's smaller files that cannot draft for ``target``, each with why in one
    sentence (runs off the GUI thread: it reads headers)."""
    library = library or []
    t_info = read_model_info(target)
    infos = {str(m.path): m.info for m in library}
    out = []
    for c in draft_choices(target, drafts, library):
        info = infos.get(c.path)
        if info is None:
            try:
                info = read_model_info(c.path)
            except Exception:  # unreadable: the file name speaks
                info = None
        label = label_for(c.path, info)
        short = "" if c.usable else _short(t_info, c.path, c.reason)
        out.append(DraftEntry(c.path, label.name, c.usable, c.reason, short, label.detail))
    listed = {e.path for e in out} | {target}
    refused = 0
    for m in library:
        if refused >= MAX_REFUSED_SHOWN:
            break
        path = str(m.path)
        if path in listed or m.info is None or not m.complete or \
                (t_info.file_size and m.size >= t_info.file_size):
            continue
        try:
            report = check(t_info, read_model_info(path))
        except Exception:
            continue
        if report.usable:
            continue  # usable but not chosen by draft_choices (e.g. not smaller): not a refusal
        label = label_for(path, m.info)
        out.append(DraftEntry(path, label.name, False, report.reason(), why_not(report),
                              label.detail))
        refused += 1
    return out


def builtin_label(n_layers: int) -> str:
    """The picker's entry for a target that drafts with its own MTP layers."""
    return f"Built-in (MTP, {n_layers} layer{'s' if n_layers != 1 else ''})"


def describe(info: ModelInfo) -> str:
    return describe_info(info)


class ModelBar(QFrame):
    draft_switch_toggled = Signal(bool)
    """The draft on/off switch changed; takes effect on the next reply."""
    drafts_checked = Signal()
    """The draft list was rebuilt after a compatibility check."""
    problem = Signal(str, list, str)
    """Something to tell the user: a title, short sentences, technical details."""
    problem_cleared = Signal()
    """A load started or succeeded: an earlier problem no longer applies."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ModelBar")
        self.ctx = ctx
        self.client = ctx.engine
        self._wanted_draft = ""
        self._check_id = 0  # only the newest compatibility check may fill the list
        self._refusal: CompatReport | None = None  # the newest refused draft's report
        self._restore_done = False  # the last session's models are loaded once, at start
        self._loading_target = ""  # the target asked for and not yet loaded (or failed)
        self._entries: list[DraftEntry] = []  # the newest checked draft files

        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 8, 12, 8)
        outer.setSpacing(4)
        row = QHBoxLayout()
        outer.addLayout(row)
        row.addWidget(self._caption("Target"))
        self.target_combo = ElidingCombo(self)
        self.target_combo.setMinimumWidth(110)
        self.target_combo.setPlaceholderText("Choose a model…")
        self.target_combo.activated.connect(self._on_target_activated)
        row.addWidget(self.target_combo, 2)
        self.target_open = QPushButton("Open…", self)
        self.target_open.setToolTip("Load a target model from a GGUF file")
        self.target_open.clicked.connect(self.open_target_dialog)
        row.addWidget(self.target_open)
        self.load_gear = LoadGear(ctx, self.reload_models, self)
        row.addWidget(self.load_gear)
        self.target_eject = QPushButton("Eject", self)
        self.target_eject.setToolTip("Unload the target and the draft (frees their memory)")
        self.target_eject.clicked.connect(self.eject)
        self.target_eject.setEnabled(False)
        row.addWidget(self.target_eject)
        row.addSpacing(8)
        row.addWidget(self._caption("Draft"))
        self.draft_model = QStandardItemModel(self)
        self.draft_combo = ElidingCombo(self)
        self.draft_combo.setModel(self.draft_model)
        self.draft_combo.setMinimumWidth(110)
        self.draft_combo.activated.connect(self._on_draft_activated)
        row.addWidget(self.draft_combo, 2)
        self.draft_open = QPushButton("Open…", self)
        self.draft_open.setToolTip("Load a draft model from a GGUF file")
        self.draft_open.clicked.connect(self._open_draft_dialog)
        row.addWidget(self.draft_open)
        row.addSpacing(6)
        self.draft_switch = SpecSwitch(self)
        self.draft_switch.switched.connect(self.draft_switch_toggled)
        row.addWidget(self.draft_switch)
        self.recheck = RecheckButton(self)
        self.recheck.clicked.connect(self.clear_verdict)
        row.addWidget(self.recheck)

        status = QHBoxLayout()
        outer.addLayout(status)
        self.status = LoadStatus("No model loaded. Open a GGUF file to start.", self)
        status.addWidget(self.status, 1)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1000)
        self.progress.setFixedWidth(220)
        self.progress.hide()
        status.addWidget(self.progress)
        self.cancel = QPushButton("Cancel", self)
        self.cancel.clicked.connect(self.client.cancel_load)
        self.cancel.hide()
        status.addWidget(self.cancel)
        self.server_chip = ServerChip(ctx.server, self)
        status.addWidget(self.server_chip)
        # The header never changes height when a load starts or ends: the status keeps
        # room for two lines (one per model) and for the progress bar and Cancel it shares
        # the row with; hidden, those give their width back to the status.
        self.status.setMinimumHeight(max(self.status.minimumHeight(),
                                         self.cancel.sizeHint().height(),
                                         self.progress.sizeHint().height()))
        self.offer = DraftOffer(ctx, self)
        self.offer.draft_downloaded.connect(self.choose_draft)
        outer.addWidget(self.offer)

        e = self.client
        e.load_started.connect(self._on_load_started)
        e.load_progressed.connect(self._on_progress)
        e.load_step.connect(self._on_load_step)
        e.target_loaded.connect(self._on_target_loaded)
        e.draft_loaded.connect(self._on_draft_loaded)
        e.draft_unloaded.connect(self._on_draft_unloaded)
        e.target_unloaded.connect(self._on_target_unloaded)
        e.draft_refused.connect(self._on_refused)
        e.load_failed.connect(self._on_failed)
        e.load_cancelled.connect(self._on_cancelled)
        ctx.library.scanned.connect(self._on_library_scanned)
        ctx.load_requested.connect(self._on_load_requested)
        self._fill_targets()
        self._fill_drafts([])

    def show_verdict(self, verdict: PolicyVerdict | None) -> None:
        """The adaptive policy's judgement after a reply, in the switch's label."""
        self.draft_switch.set_verdict(verdict)
        self.recheck.set_verdict(verdict if self.draft_switch.speculating else None)

    def clear_verdict(self) -> None:
        """Forget "slower here" on the engine thread; the next reply measures again."""
        self.client.submit_job(lambda engine: engine.clear_adaptive_verdict() if engine else None)
        self.show_verdict(None)

    def _caption(self, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setObjectName("PanelTitle")
        return label

    # -- choosing ------------------------------------------------------------
    def dialog_folder(self) -> str:
        """Where the file picker opens: the models folder (created if missing)."""
        folder = Path(self.ctx.library.models_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return str(Path.home())
        return str(folder)

    def open_target_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a target model", self.dialog_folder(),
                                              GGUF_FILTER)
        if path:
            self.choose_target(path)

    def _open_draft_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a draft model", self.dialog_folder(),
                                              GGUF_FILTER)
        if path:
            self.choose_draft(path)

    def reload_models(self) -> None:
        """Load the current target and draft again (new load options)."""
        e = self.client
        if e.target_info is None:
            return
        draft = e.draft_info.source if e.draft_info is not None else ""
        self.choose_target(e.target_info.source)
        if draft:
            self.choose_draft(draft)

    def eject(self) -> None:
        """Unload both models; the session forgets them so the next start loads nothing."""
        self._wanted_draft = ""
        self.ctx.settings.last_target = self.ctx.settings.last_draft = ""
        self.ctx.settings.save()
        self.client.unload_target()

    def restore_session(self) -> None:
        """Load the last target and draft again (unless a model was chosen meanwhile)."""
        if self._restore_done:
            return
        self._restore_done = True
        s = self.ctx.settings
        if not s.last_target or self.client.has_target:
            return
        if not Path(s.last_target).is_file():
            self.problem.emit("The last model is gone", [
                f"{Path(s.last_target).name} is no longer at {Path(s.last_target).parent}; "
                "open it again or pick another model."], s.last_target)
            return
        target, draft = s.last_target, s.last_draft
        self.choose_target(target)
        if draft and Path(draft).is_file():
            self.choose_draft(draft)

    def choose_target(self, path: str) -> None:
        """Remember ``path`` and load it as the target."""
        self._restore_done = True
        self.ctx.settings.remember("target", str(path))
        self.ctx.settings.save()
        self._loading_target = str(path)
        self._fill_targets()
        self.client.load_target(str(path))
        self.refresh_drafts()

    def choose_draft(self, path: str) -> None:
        """Remember ``path`` and load it as the draft (after the target)."""
        path = str(path)
        self.ctx.settings.remember("draft", path)
        self.ctx.settings.save()
        self._wanted_draft = path
        self.refresh_drafts()
        self.client.load_draft(path)

    def _on_load_requested(self, kind: str, path: str) -> None:
        """Another page (My Models) asked to load ``path`` as the target or the draft."""
        if kind == "target":
            self.choose_target(path)
        else:
            self.choose_draft(path)

    def _on_library_scanned(self, _models: object) -> None:
        self._fill_targets()
        if self.ctx.settings.last_target:
            self.refresh_drafts()

    def _library_paths(self) -> list[str]:
        return [str(m.path) for m in self.ctx.library.models if m.complete and m.info is not None]

    def _on_target_activated(self, index: int) -> None:
        path = self.target_combo.itemData(index, PATH_ROLE)
        if path:
            self.choose_target(str(path))

    def _on_draft_activated(self, index: int) -> None:
        path = self.draft_combo.itemData(index, PATH_ROLE)
        self.client.builtin_on = path == BUILTIN_MTP
        if path == BUILTIN_MTP:
            self._wanted_draft = ""
            self.ctx.settings.last_draft = ""
            self.ctx.settings.save()
            if self.client.has_draft:
                self.client.unload_draft()  # draft_unloaded turns the switch on for the head
            self._sync_switch()
            self._update_status()
        elif not path:
            self._wanted_draft = ""
            self.ctx.settings.last_draft = ""
            self.ctx.settings.save()
            self.client.unload_draft()
            self._sync_switch()
            self._update_status()
        else:
            self.choose_draft(str(path))

    def _sync_switch(self) -> None:
        """The switch offers speculation with a draft model or the target's MTP head."""
        self.draft_switch.set_builtin(self.client.has_builtin_draft and not self.client.has_draft)
        self.draft_switch.set_draft_loaded(self.client.can_speculate)

    @property
    def speculating(self) -> bool:
        """Whether the next reply speculates (what the switch shows)."""
        return self.draft_switch.speculating

    def set_lookup_mode(self, lookup: bool) -> None:
        """Prompt lookup needs no draft model, so the switch may be on without one."""
        self.draft_switch.set_lookup_mode(lookup)

    # -- lists ---------------------------------------------------------------
    def label(self, path: str) -> ModelLabel:
        """A model's picker label: its clean name, size and quantization (from the library's
        header summary or the loaded model's, else from the file name)."""
        e = self.client
        for info in (e.target_info, e.draft_info):
            if info is not None and info.source == path:
                return label_for(path, info)
        model = self.ctx.library.find(path)
        if model is not None:
            return label_for(path, model.info, model.size)
        return label_for(path)

    def shown_target(self) -> str:
        """The target the box shows: the one loading, else the one loaded, never one that failed."""
        info = self.client.target_info
        return self._loading_target or (info.source if info is not None else "")

    def _fill_targets(self) -> None:
        """Recent targets first, then the rest of the library."""
        self.target_combo.clear()
        recent = list(self.ctx.settings.recent_targets)
        paths = recent + [p for p in self._library_paths() if p not in recent]
        for path in paths:
            label = self.label(path)
            self.target_combo.addItem(label.text)
            i = self.target_combo.count() - 1
            self.target_combo.setItemData(i, path, PATH_ROLE)
            self.target_combo.setItemData(i, label.detail, DETAIL_ROLE)
            self.target_combo.setItemData(i, path, Qt.ItemDataRole.ToolTipRole)
        current = self.shown_target()
        self.target_combo.setCurrentIndex(paths.index(current) if current in paths else -1)

    def refresh_drafts(self) -> None:
        """Re-check the recent drafts against the current target, in the background."""
        target = self.ctx.settings.last_target
        drafts = list(self.ctx.settings.recent_drafts)
        if not target:
            self._fill_drafts([DraftEntry(p, Path(p).name, False, "Choose a target first.")
                               for p in drafts])
            return
        self._check_id += 1
        check_id = self._check_id
        library = list(self.ctx.library.models)
        start_task(self, lambda _ctx: check_drafts(target, drafts, library),
                   on_done=lambda entries: self._on_checked(check_id, entries),
                   on_failed=lambda error: self._on_check_failed(check_id, error.message))

    def _on_checked(self, check_id: int, entries: list[DraftEntry]) -> None:
        if check_id == self._check_id:
            self._fill_drafts(entries)
            if any(e.usable for e in entries) or self.client.draft_info is not None:
                self.offer.withdraw()
            elif self.offer.offer is None or self.offer.offer.target != self.ctx.settings.last_target:
                self.offer.look_for(self.ctx.settings.last_target)
            self.drafts_checked.emit()

    def _on_check_failed(self, check_id: int, message: str) -> None:
        """The target's header is unreadable; loading it reports that, so no dialog here."""
        if check_id == self._check_id:
            reason = f"The target's header could not be read: {message}"
            self._fill_drafts([DraftEntry(p, Path(p).name, False, reason)
                               for p in self.ctx.settings.recent_drafts])
            self.drafts_checked.emit()

    def _fill_drafts(self, entries: list[DraftEntry]) -> None:
        """The picker: the target's built-in MTP draft first when it has one, "No draft",
        then the draft files (compatible ones enabled)."""
        self._entries = list(entries)
        m = self.draft_model
        m.clear()
        select = 0
        n_mtp = self.client.mtp_layers if self.client.has_target else 0
        if n_mtp > 0:
            builtin = QStandardItem(builtin_label(n_mtp))
            builtin.setData(BUILTIN_MTP, PATH_ROLE)
            builtin.setData(True, USABLE_ROLE)
            builtin.setToolTip("The target's own multi-token-prediction layers draft: "
                               "no draft model to load, exact like any draft")
            m.appendRow(builtin)
        none = QStandardItem("No draft")
        none.setData("", PATH_ROLE)
        m.appendRow(none)
        if n_mtp > 0:
            select = 0 if self.client.builtin_on else 1
        for e in entries:
            head = f"{e.name}  {e.detail}" if e.detail else e.name
            why = (e.short or e.reason).rstrip(".")
            item = QStandardItem(head if e.usable else f"{head}  — incompatible: {why}")
            item.setData(e.path, PATH_ROLE)
            item.setData(e.usable, USABLE_ROLE)
            item.setData(e.detail if e.usable else "incompatible", DETAIL_ROLE)
            item.setToolTip(f"{e.path}\n{e.reason}")
            item.setEnabled(e.usable)
            m.appendRow(item)
            if e.usable and e.path == self._current_draft_path():
                select = m.rowCount() - 1
        self.draft_combo.setCurrentIndex(select)

    def _current_draft_path(self) -> str:
        info = self.client.draft_info
        return info.source if info is not None else self._wanted_draft

    def draft_entry(self, path: str) -> QStandardItem | None:
        for row in range(self.draft_model.rowCount()):
            item = self.draft_model.item(row)
            if item.data(PATH_ROLE) == str(path):
                return item
        return None

    # -- engine results ------------------------------------------------------
    def _on_load_started(self, kind: str, path: str) -> None:
        self.problem_cleared.emit()
        self.progress.setValue(0)
        self.progress.setFormat(f"Loading {kind}: %p%")
        self.progress.show()
        self.cancel.show()
        self.status.setText(f"Loading {Path(path).name}…")
        self.draft_switch.set_draft_loading(self._draft_pending())

    def _on_load_step(self, kind: str, step: str) -> None:
        """A step after reading the file (the pair's timing): named, with its own progress."""
        self.progress.setValue(0)
        self.progress.setFormat(f"{step}: %p%")
        self.status.setText(f"{step}… (timing the target's and the draft's decodes, so the "
                            f"adaptive policy starts from this machine's costs)")

    def _on_progress(self, _kind: str, frac: float) -> None:
        self.progress.setValue(int(frac * 1000))

    def _done_loading(self) -> None:
        self.progress.hide()
        self.cancel.hide()

    def _on_target_loaded(self, _info: ModelInfo) -> None:
        self._done_loading()
        self._loading_target = ""
        self._fill_targets()  # labels from the loaded header
        self._fill_drafts(self._entries)  # the built-in entry, now that the target is known
        self._sync_switch()
        self._update_status()
        if self._wanted_draft and not self.client.is_loading("draft"):
            entry = self.draft_entry(self._wanted_draft)
            if entry is None or entry.data(USABLE_ROLE) is not False:
                self.client.load_draft(self._wanted_draft)

    def _on_draft_loaded(self, _info: ModelInfo, _report: CompatReport) -> None:
        self._done_loading()
        self._update_status()
        entry = self.draft_entry(self._wanted_draft)
        if entry is not None:
            self.draft_combo.setCurrentIndex(entry.row())
        self._sync_switch()
        self.draft_switch.set_draft_loading(self._draft_pending())
        self.recheck.set_verdict(None)

    def _on_draft_unloaded(self) -> None:
        self._sync_switch()
        self.recheck.set_verdict(None)
        self._update_status()

    def _on_target_unloaded(self) -> None:
        self.target_combo.setCurrentIndex(-1)
        self._fill_drafts(self._entries)  # no built-in entry without a target
        self._sync_switch()
        self._update_status()

    def _on_refused(self, report: CompatReport) -> None:
        self._refusal = report
    def _on_failed(self, kind: str, message: str) -> None:
        self._done_loading()
        self._keep_loaded(kind)
        self._update_status()
        self._show_error(message)

    def _on_cancelled(self, kind: str) -> None:
        self._done_loading()
        self._keep_loaded(kind)
        self._update_status()
        self.status.setText(self.status.text() + f"  (loading the {kind} was cancelled)")

    def _keep_loaded(self, kind: str) -> None:
        """After a failed or cancelled load, the header and the session name what is still
        loaded and in use (the old pair), never the file that did not load."""
        e, s = self.client, self.ctx.settings
        if kind == "target":
            self._loading_target = ""
            s.last_target = e.target_info.source if e.target_info is not None else ""
            if e.draft_info is not None:
                s.last_draft = e.draft_info.source
            self._fill_targets()
            self.refresh_drafts()
        else:
            self._wanted_draft = ""
            s.last_draft = e.draft_info.source if e.draft_info is not None else ""
            entry = self.draft_entry(s.last_draft) if s.last_draft else None
            self.draft_combo.setCurrentIndex(entry.row() if entry is not None else 0)
        try:
            s.save()
        except OSError:
            pass  # the header is right; only the next start's memory is lost
        self.draft_switch.set_draft_loading(self._draft_pending())

    def _draft_pending(self) -> bool:
        """A draft was asked for and has not loaded yet (the target may still be loading)."""
        e = self.client
        return bool(self._wanted_draft) and (
            e.is_loading("draft") or e.is_loading("target")) and (
            e.draft_info is None or e.draft_info.source != self._wanted_draft)

    def _show_error(self, message: str) -> None:
        report, self._refusal = self._refusal, None
        if report is not None:
            title = f"{Path(report.draft).name} cannot serve as a draft for {Path(report.target).name}"
            sentences = [*compat_sentences.refusal_sentences(report), compat_sentences.ADVICE]
            self.problem.emit(title, sentences, compat_sentences.details(report))
        else:
            self.problem.emit("Could not load the model", [message], "")

    def _update_status(self) -> None:
        e = self.client
        self.target_eject.setEnabled(e.has_target)
        if e.target_info is None:
            self.status.setText("No model loaded. Open a GGUF file to start.")
            return
        # One line per model; "·" never starts a wrapped line (a no-break space before it).
        text = f"Target: {describe(e.target_info)} · on {e.backend}, {e.n_threads} threads"
        if self._draft_pending():
            text += f"\nDraft: loading {self.label(self._wanted_draft).name}…"
        elif e.draft_info:
            text += f"\nDraft: {describe(e.draft_info)}"
        elif e.has_builtin_draft:
            text += f"\nDraft: {builtin_label(e.mtp_layers)}"
        else:
            text += "\nNo draft"
        self.status.setText(text.replace(" · ", "\u00a0· "))
