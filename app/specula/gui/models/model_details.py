"""The library's details pane: a model's full metadata and which library models it pairs with.

The pairs are worked out in the background by the core's one pairing decision
(:func:`specula.core.pairing.drafts.library_pairs`); so is whether the model
can draft for the loaded target ("Load as draft" is disabled with the reason
when it cannot). A newer selection cancels the older one's result.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.gguf.speculation_notes import kind_rows
from specula.core.hardware import fit
from specula.core.library.labels import clean_name, label_for
from specula.core.library.load_defaults import defaults_for
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import detected_gpu_free, human_params, plural
from specula.core.pairing.drafts import DraftCandidate, LibraryPairs, library_pairs
from specula.core.pairing.pair_status import PairStatus, pair_status
from specula.core.sizes import byte_size
from specula.gui.models.load_defaults_dialog import LoadDefaultsDialog
from specula.gui.models.widgets import caption, muted, side_list
from specula.gui.tasks import Task, TaskContext, TaskError, start_task

PATH_ROLE = Qt.ItemDataRole.UserRole + 1


def metadata_html(m: LocalModel, loads_with: str = "") -> str:
    """The full metadata as a two-column table; ``loads_with``: the context it loads with."""
    info = m.info
    rows: list[tuple[str, str]] = [("File", str(m.path)), ("Size", byte_size(m.size))]
    if len(m.parts) > 1:
        rows.append(("Parts", f"{len(m.parts)}" + ("" if m.complete else " (some missing)")))
    rows.append(("Repository", m.repo_id or "—"))
    rows.append(("Folder", f"{m.root}" + ("" if m.managed else "  (indexed, not managed)")))
    if info is None:
        rows.append(("Header", m.error or "unreadable"))
    else:
        rows += [
            ("Name", info.display_name), ("Architecture", info.architecture or "?"),
            ("Parameters", f"{human_params(info.parameter_count)} ({info.parameter_count:,})"
             if info.parameter_count else "?"),
            ("Quantization", info.quantization or "?"),
            ("Context length", f"{info.context_length:,}" if info.context_length else "?"),
            *([("Loads with", loads_with)] if loads_with else []),
            ("Layers / embedding", f"{info.n_layers} / {info.n_embd}"),
            ("Heads (KV)", f"{info.n_head} ({info.n_head_kv})"),
            ("Tokenizer", tokenizer_text(info)),
            ("Fingerprint", info.tokenizer_fingerprint or "?"),
            ("BOS / EOS", f"{info.bos_id} / {info.eos_id}"),
            ("Chat template", "yes" if info.has_chat_template else "no"),
            ("GGUF version", str(info.gguf_version)),
        ]
        # What the model is and what that means for speculation (memory, experts, MTP).
        rows += [(label[:1].upper() + label[1:], text) for label, text in kind_rows(info)]
    body = "".join(f"<tr><td style='padding-right:12px'><b>{html.escape(k)}</b></td>"
                   f"<td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table cellspacing='2'>{body}</table>"


def tokenizer_text(info: ModelInfo) -> str:
    """The tokenizer as a reader knows it: 'gpt2 / qwen2, 151,936 tokens' (no hash)."""
    kind = " / ".join(k for k in (info.tokenizer_model, info.tokenizer_pre) if k) or "?"
    return f"{kind}, {info.vocab_size:,} tokens" if info.vocab_size else kind


@dataclass
class DetailsResult:
    """What the background work found for one model."""

    pairs: LibraryPairs
    as_draft: PairStatus | None  # as the loaded target's draft (None: no target)
    fit: str = ""  # whether it fits this machine (the ⚙ dialog's estimate)


def work_out(model: LocalModel, library: list[LocalModel], target: ModelInfo | None,
             ctx: TaskContext, n_ctx: int | None = None) -> DetailsResult:
    """The model's pairs in the library, whether it fits this machine at ``n_ctx`` (its own
    load default first) and, with a target loaded, how it pairs as that target's draft."""
    me = read_model_info(model.path)
    pairs = library_pairs(me, library, path=model.path, name=model.name, cancel=ctx.cancel_event)
    status = None
    if target is not None:
        status = pair_status(target, Path(target.source).name, me, model.name)
    own = defaults_for(model.path).n_ctx
    return DetailsResult(pairs, status, fit_text(me, model.size, target, status, own or n_ctx,
                                                 detected_gpu_free()))


def fit_text(me: ModelInfo, weights: int, target: ModelInfo | None, status: PairStatus | None,
             n_ctx: int | None, gpu_free: list[int]) -> str:
    """The memory estimate of :func:`specula.core.hardware.fit.estimate` (the one the chat's
    ⚙ shows): alone as a target, and with the loaded target when it can draft for it."""
    alone = fit.estimate(me, None, n_ctx=n_ctx, target_weights=weights, gpu_free=gpu_free)
    lines = [f"As the target ({alone.verdict.value}): {alone.message}"]
    if target is not None and status is not None and status.usable:
        pair = fit.estimate(target, me, n_ctx=n_ctx, draft_weights=weights, gpu_free=gpu_free)
        lines.append(f"As the draft of {target.display_name} ({pair.verdict.value}): "
                     f"{pair.message}")
    return "\n".join(lines)


def draft_refusal(status: PairStatus | None, target: ModelInfo | None) -> str:
    """Why this model cannot be loaded as the draft of the loaded target ("" when it can)."""
    if status is None or target is None or status.usable:
        return ""
    return status.detail


def details_title(model: LocalModel) -> str:
    """'Qwen2.5 Coder 1.5B Instruct · 1.5B · Q4_K_M': the size and quantization never left to
    the name (two sizes of a family otherwise read alike)."""
    if model.info is None:
        return model.name
    label = label_for(model.path, model.info)
    name = clean_name(model.info.display_name)
    return f"{name} · {label.detail}" if label.detail else name


class ModelDetails(QFrame):
    load_requested = Signal(str, str)
    """The user asked to load this model: kind (target | draft), path."""
    remove_requested = Signal(object)
    """The user asked to delete this model (LocalModel); the page confirms first."""
    reveal_requested = Signal(object)
    """The user asked to see this model's folder (LocalModel)."""
    pairs_ready = Signal(object)
    """The pairs of the shown model were worked out (LibraryPairs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SidePanel")
        self.setMaximumWidth(430)
        self.model: LocalModel | None = None
        self.library: list[LocalModel] = []
        self.target: ModelInfo | None = None  # the loaded target "Load as draft" is judged against
        self.n_ctx: Callable[[], int | None] = lambda: None  # the context the fit is estimated at
        self._task: Task | None = None
        # The context a model loads with, in words (the library page knows the settings).
        self.loads_with: Callable[[LocalModel], str] = lambda _m: ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(14, 12, 14, 12)
        self.title = QLabel("Select a model", self)
        self.title.setObjectName("PageTitle")
        self.title.setWordWrap(True)
        lay.addWidget(self.title)
        buttons = QHBoxLayout()
        self.load_target = QPushButton("Load as target", self)
        self.load_target.setObjectName("Primary")
        self.load_target.clicked.connect(lambda: self._load("target"))
        self.load_draft = QPushButton("Load as draft", self)
        self.load_draft.clicked.connect(lambda: self._load("draft"))
        self.reveal = QPushButton("Show in folder", self)
        self.reveal.clicked.connect(lambda: self.model and self.reveal_requested.emit(self.model))
        self.remove = QPushButton("Remove…", self)
        self.remove.setObjectName("Danger")
        self.remove.clicked.connect(lambda: self.model and self.remove_requested.emit(self.model))
        for b in (self.load_target, self.load_draft):
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        buttons = QHBoxLayout()
        self.gear = QPushButton("⚙ Load defaults…", self)
        self.gear.setToolTip("This model's own context length, GPU layers, threads, draft and mode")
        self.gear.clicked.connect(self._edit_defaults)
        for b in (self.reveal, self.remove, self.gear):
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        self.meta = QLabel("", self)
        self.meta.setTextFormat(Qt.TextFormat.RichText)
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta.setWordWrap(True)
        # The metadata, the fit and the pairing verdict scroll: their rows never set the
        # window's height (it fits 700 px).
        body = QWidget(self)
        body_lay = QVBoxLayout(body)
        body_lay.setContentsMargins(0, 0, 0, 0)
        body_lay.addWidget(self.meta)
        body_lay.addWidget(caption("FITS THIS MACHINE?", body))
        self.fit = muted("", body)
        self.fit.setWordWrap(True)
        body_lay.addWidget(self.fit)
        self.pairing = QLabel("", body)  # as the loaded target's draft: mark and why
        self.pairing.setWordWrap(True)
        self.pairing.setObjectName("PairingVerdict")
        body_lay.addWidget(self.pairing)
        body_lay.addStretch(1)
        meta_scroll = QScrollArea(self)
        meta_scroll.setWidgetResizable(True)
        meta_scroll.setFrameShape(QFrame.Shape.NoFrame)
        meta_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        meta_scroll.setWidget(body)
        lay.addWidget(meta_scroll, 2)
        lay.addWidget(caption("PAIRS WITH", self))
        self.pairs_status = muted("", self)
        lay.addWidget(self.pairs_status)
        self.pairs = side_list("PairsList", self)
        lay.addWidget(self.pairs, 1)
        self.show_model(None)

    def _edit_defaults(self) -> None:
        if self.model is not None:
            LoadDefaultsDialog(self.model, self.library, self).exec()
            self.show_model(self.model)  # the context it loads with may have changed

    def show_model(self, model: LocalModel | None, library: list[LocalModel] | None = None) -> None:
        self.model = model
        self.library = library if library is not None else self.library
        if self._task is not None:
            self._task.cancel()
        self.pairs.clear()
        self.fit.setText("")
        self.pairing.setText("")
        has = model is not None
        for b in (self.load_target, self.load_draft, self.reveal):
            b.setEnabled(has and model is not None and model.complete and model.info is not None)
        self.reveal.setEnabled(has)
        self.gear.setEnabled(has)
        self.remove.setEnabled(has and model is not None and model.managed)
        self.remove.setToolTip("" if model is None or model.managed else
                               "Specula only indexes this folder; remove the file there.")
        if model is None:
            self.title.setText("Select a model")
            self.meta.setText("")
            self.pairs_status.setText("")
            return
        self.title.setText(details_title(model))
        self.title.setToolTip(str(model.path))
        self.meta.setText(metadata_html(model, self.loads_with(model) if model.info else ""))
        self.pairs_status.setText("Checking which library models pair with it…")
        self.load_draft.setToolTip("")
        if model.info is None:
            why = model.error or "it is not a readable GGUF model"
            self.pairs_status.setText(f"Specula cannot load this file: {why}")
            return
        if not model.complete:
            return
        others, target, n_ctx = list(self.library), self.target, self.n_ctx()
        self.fit.setText("Estimating the memory it needs…")

        def work(ctx: TaskContext) -> DetailsResult:
            return work_out(model, others, target, ctx, n_ctx)

        self._task = start_task(self, work, on_done=self._show_result, on_failed=self._pairs_failed)

    def set_target(self, target: ModelInfo | None) -> None:
        """The loaded target changed: judge the shown model against it again."""
        self.target = target
        self.show_model(self.model)

    def _show_result(self, result: DetailsResult) -> None:
        refusal = draft_refusal(result.as_draft, self.target)
        self.load_draft.setEnabled(not refusal)
        self.load_draft.setToolTip(refusal or (
            f"Use it as the draft of {self.target.display_name}" if self.target else ""))
        status = result.as_draft
        self.pairing.setText("" if status is None else
                             f"{'✓' if status.usable else '✗'} {status.detail}")
        self.fit.setText(result.fit)
        self._show_pairs(result.pairs)

    def _show_pairs(self, pairs: LibraryPairs) -> None:
        self.pairs.clear()
        self._add_rows("Draft for it", pairs.drafts)
        self._add_rows("Target it drafts for", pairs.targets)
        total = len(pairs.drafts) + len(pairs.targets)
        if total == 0:
            self.pairs_status.setText("No library model pairs with this one.")
        else:
            self.pairs_status.setText(f"{plural(len(pairs.drafts), 'draft')} for it, "
                                      f"{plural(len(pairs.targets), 'target')} it can draft for.")
        self.pairs_ready.emit(pairs)

    def _add_rows(self, role: str, pairs: list[DraftCandidate]) -> None:
        for p in pairs:
            mark = "✓" if p.report.verdict.value == "identical" else "≈"
            folder = p.model.root.name if p.model is not None else ""
            item = QListWidgetItem(f"{mark} {role}: {clean_name(p.info.display_name)}\n{p.name} · "
                                   f"{byte_size(p.size)}" + (f" · in {folder}" if folder else ""))
            item.setToolTip(f"{p.source}\n{', '.join(p.reasons)}\n{p.report.reason()}")
            item.setData(PATH_ROLE, p.source)
            self.pairs.addItem(item)

    def _pairs_failed(self, error: TaskError) -> None:
        self.pairs_status.setText(f"Could not check pairs: {error.message}")

    def _load(self, kind: str) -> None:
        if self.model is not None:
            self.load_requested.emit(kind, str(self.model.path))
