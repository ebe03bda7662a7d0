"""Top of the chat page: target and draft pickers, the speculative switch, load progress.

Files come from a file dialog (opened in the models folder) and are
remembered in the settings' recent lists. Draft candidates are checked
against the chosen target in the background (:mod:`specula.gui.chat.draft_list`);
the pickers (:mod:`specula.gui.chat.model_pickers`) paint the result. Problems (a
refused draft, a failed load) go to the chat column's banner through
:attr:`ModelBar.problem`, never into this bar, so the bar keeps its height.
The speculative switch (:class:`SpecSwitch`) tells the truth about the next reply.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QStandardItem
from PySide6.QtWidgets import QFrame, QHBoxLayout, QProgressBar, QPushButton, QVBoxLayout, QWidget

from specula.core.engine.verdict import PolicyVerdict
from specula.core.gguf import compat_sentences
from specula.core.gguf.compat import CompatReport
from specula.core.gguf.draft_head import HeadInfo
from specula.core.gguf.model_info import ModelInfo
from specula.core.library.labels import ModelLabel, label_for
from specula.core.pairing.heads import HeadChoice, head_label, is_head_file
from specula.gui.chat.draft_list import (
    BUILTIN_MTP,
    DraftEntry,
    check_drafts,
    check_heads,
    draft_rows,
    status_text,
)
from specula.gui.chat.draft_offer import DraftOffer
from specula.gui.chat.load_status import LoadStatus
from specula.gui.chat.model_pickers import USABLE_ROLE, DraftPicker, TargetPicker, dialog_folder
from specula.gui.chat.spec_switch import RecheckButton, SpecSwitch
from specula.gui.context import AppContext
from specula.gui.server_chip import ServerChip
from specula.gui.tasks import start_task


def failure_words(message: str, path: str, kept: bool) -> tuple[str, list[str], str]:
    """A failed load for the banner: the file's name in the title, the reason as the
    sentence (the path it starts with left to the details), whether the models in use are
    still loaded (``kept``), the whole message as details."""
    name = Path(path).name if path else ""
    reason = message[len(path) + 2:] if path and message.startswith(f"{path}: ") else message
    still = ["The models in use stay loaded."] if kept else []
    return (f"Could not load {name}" if name else "Could not load the model",
            [reason, *still], message)


class ModelBar(QFrame):
    draft_switch_toggled = Signal(bool)
    """The draft on/off switch changed; takes effect on the next reply."""
    drafts_checked = Signal()
    """The draft list was rebuilt after a compatibility check."""
    problem = Signal(str, list, str)
    """Something to tell the user: a title, short sentences, technical details."""
    problem_cleared = Signal()
    """A load started or succeeded: an earlier problem no longer applies."""
    pause_shown = Signal(object)
    """The header started or stopped saying adaptive paused drafting (the verdict, or None)."""
    head_changed = Signal(str)
    """A draft head loaded (its kind, the mode that drafts with it) or went ("")."""

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
        self._heads: list[HeadChoice] = []  # the newest checked draft heads

        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 8, 12, 8)
        outer.setSpacing(4)
        row = QHBoxLayout()
        outer.addLayout(row)
        self.targets = TargetPicker(ctx, self.reload_models, self._dialog_folder, self)
        self.targets.chosen.connect(self.choose_target)
        self.targets.eject_requested.connect(self.eject)
        row.addWidget(self.targets, 3)  # its box shares the picker with three buttons
        row.addSpacing(8)
        self.drafts = DraftPicker(self._dialog_folder, self)
        self.drafts.chosen.connect(self._on_draft_chosen)
        row.addWidget(self.drafts, 2)  # with one: so both names get alike room
        row.addSpacing(6)
        # The parts tests and tools reach for by name.
        self.target_combo, self.target_eject = self.targets.combo, self.targets.eject
        self.load_gear = self.targets.load_gear
        self.draft_combo, self.draft_model = self.drafts.combo, self.drafts.model
        self.draft_switch = SpecSwitch(self)
        self.draft_switch.switched.connect(self.draft_switch_toggled)
        self.draft_switch.pause_shown.connect(self.pause_shown)
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
        e.head_loaded.connect(self._on_head_loaded)
        e.head_unloaded.connect(self._on_head_unloaded)
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

    # -- choosing ------------------------------------------------------------
    def open_target_dialog(self) -> None:
        self.targets.open_dialog()

    def _dialog_folder(self) -> str:
        return dialog_folder(Path(self.ctx.library.models_dir))

    def reload_models(self) -> None:
        """Load the current target and draft again (new load options)."""
        e = self.client
        if e.target_info is None:
            return
        draft = e.draft_info.source if e.draft_info is not None else \
            e.head_info.source if e.head_info is not None else ""
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
        """The library's models a target can be (a draft head never is)."""
        return [str(m.path) for m in self.ctx.library.models
                if m.complete and m.info is not None and not is_head_file(m)]

    def _on_draft_chosen(self, path: str) -> None:
        self.client.builtin_on = path == BUILTIN_MTP
        if path == BUILTIN_MTP:
            self._wanted_draft = ""
            self.ctx.settings.last_draft = ""
            self.ctx.settings.save()
            if self.client.has_draft or self.client.has_head:
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
            self.choose_draft(path)

    def _sync_switch(self) -> None:
        """The switch offers speculation with a draft model, a draft head or the target's MTP head."""
        e = self.client
        self.draft_switch.set_builtin(e.has_builtin_draft and not e.has_draft and not e.has_head)
        self.draft_switch.set_head(head_label(e.head_info.kind) if e.head_info is not None else "")
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
        heads = {str(m.path) for m in self.ctx.library.models if is_head_file(m)}
        recent = [p for p in self.ctx.settings.recent_targets if p not in heads]
        paths = recent + [p for p in self._library_paths() if p not in recent]
        self.targets.fill([(p, self.label(p)) for p in paths], self.shown_target())

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
        start_task(self, lambda _ctx: (check_drafts(target, drafts, library),
                                       check_heads(target, drafts, library)),
                   on_done=lambda found: self._on_checked(check_id, *found),
                   on_failed=lambda error: self._on_check_failed(check_id, error.message))

    def _on_checked(self, check_id: int, entries: list[DraftEntry],
                    heads: list[HeadChoice]) -> None:
        if check_id == self._check_id:
            self._heads = list(heads)
            self._fill_drafts(entries)
            if any(e.usable for e in entries) or any(h.usable for h in heads) or \
                    self.client.draft_info is not None or self.client.has_head:
                self.offer.withdraw()
            elif self.offer.offer is None or self.offer.offer.target != self.ctx.settings.last_target:
                self.offer.look_for(self.ctx.settings.last_target)
            self.drafts_checked.emit()

    def _on_check_failed(self, check_id: int, message: str) -> None:
        """The target's header is unreadable; loading it reports that, so no dialog here."""
        if check_id == self._check_id:
            self._heads = []
            reason = f"The target's header could not be read: {message}"
            self._fill_drafts([DraftEntry(p, Path(p).name, False, reason)
                               for p in self.ctx.settings.recent_drafts])
            self.drafts_checked.emit()

    def _fill_drafts(self, entries: list[DraftEntry]) -> None:
        """The picker: the target's built-in MTP draft first when it has one, "No draft",
        the draft heads, then the draft files (compatible ones enabled)."""
        self._entries = list(entries)
        n_mtp = self.client.mtp_layers if self.client.has_target else 0
        self.drafts.fill(*draft_rows(self._entries, n_mtp, self.client.builtin_on,
                                     self._current_draft_path(), self._heads))

    def _current_draft_path(self) -> str:
        e = self.client
        info = e.draft_info
        return info.source if info is not None else \
            e.head_info.source if e.head_info is not None else self._wanted_draft

    def draft_entry(self, path: str) -> QStandardItem | None:
        return self.drafts.entry(path)

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

    def _on_head_loaded(self, info: HeadInfo) -> None:
        """A head is the draft now: chosen in the picker, named in the status, and its
        mode (the one that drafts with it) asked of the chat page."""
        self._done_loading()
        self._update_status()
        entry = self.draft_entry(info.source)
        if entry is not None:
            self.draft_combo.setCurrentIndex(entry.row())
        self._sync_switch()
        self.draft_switch.set_draft_loading(self._draft_pending())
        self.recheck.set_verdict(None)
        self.head_changed.emit(info.kind)

    def _on_head_unloaded(self) -> None:
        self._sync_switch()
        self._update_status()
        self.head_changed.emit("")

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
        path = self._loading_target if kind == "target" else self._wanted_draft
        self._done_loading()
        self._keep_loaded(kind)
        self._update_status()
        self._show_error(message, path)

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
            s.last_draft = e.draft_info.source if e.draft_info is not None else \
                e.head_info.source if e.head_info is not None else ""
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
        loaded = e.draft_info or e.head_info
        return bool(self._wanted_draft) and (
            e.is_loading("draft") or e.is_loading("target")) and (
            loaded is None or loaded.source != self._wanted_draft)

    def _show_error(self, message: str, path: str = "") -> None:
        report, self._refusal = self._refusal, None
        if report is not None:
            title = f"{Path(report.draft).name} cannot serve as a draft for {Path(report.target).name}"
            sentences = [*compat_sentences.refusal_sentences(report), compat_sentences.ADVICE]
            self.problem.emit(title, sentences, compat_sentences.details(report))
        else:
            self.problem.emit(*failure_words(message, path, self.client.has_target))

    def _update_status(self) -> None:
        e = self.client
        self.target_eject.setEnabled(e.has_target)
        pending = self.label(self._wanted_draft).name if self._draft_pending() else ""
        self.status.setText(status_text(
            e.target_info, e.backend, e.n_threads, draft=e.draft_info, pending_draft=pending,
            builtin_layers=e.mtp_layers if e.has_builtin_draft else 0, head=e.head_info))
