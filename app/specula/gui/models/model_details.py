"""The library's details pane: a model's full metadata and which library models it pairs with.

The pairs are worked out in the background (full headers of the plausible
models, then the compatibility check); a newer selection cancels the older
one's result.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import human_params, human_size
from specula.core.pairing.library_pairs import Pair, Pairs, pairs_for
from specula.gui.tasks import Task, TaskContext, TaskError, start_task

PATH_ROLE = Qt.ItemDataRole.UserRole + 1


def metadata_html(m: LocalModel) -> str:
    """The full metadata as a two-column table."""
    info = m.info
    rows: list[tuple[str, str]] = [("File", str(m.path)), ("Size", human_size(m.size))]
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
            ("Layers / embedding", f"{info.n_layers} / {info.n_embd}"),
            ("Heads (KV)", f"{info.n_head} ({info.n_head_kv})"),
            ("Tokenizer", f"{info.tokenizer_model} / {info.tokenizer_pre}, "
                          f"{info.vocab_size:,} tokens" if info.vocab_size else
                          f"{info.tokenizer_model}"),
            ("Fingerprint", info.tokenizer_fingerprint or "?"),
            ("BOS / EOS", f"{info.bos_id} / {info.eos_id}"),
            ("Chat template", "yes" if info.has_chat_template else "no"),
            ("GGUF version", str(info.gguf_version)),
        ]
    body = "".join(f"<tr><td style='padding-right:12px'><b>{html.escape(k)}</b></td>"
                   f"<td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table cellspacing='2'>{body}</table>"


class ModelDetails(QFrame):
    load_requested = Signal(str, str)
    """The user asked to load this model: kind (target | draft), path."""
    remove_requested = Signal(object)
    """The user asked to delete this model (LocalModel); the page confirms first."""
    reveal_requested = Signal(object)
    """The user asked to see this model's folder (LocalModel)."""
    pairs_ready = Signal(object)
    """The pairs of the shown model were worked out (Pairs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SidePanel")
        self.setMaximumWidth(430)
        self.model: LocalModel | None = None
        self.library: list[LocalModel] = []
        self._task: Task | None = None
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
        for b in (self.reveal, self.remove):
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        self.meta = QLabel("", self)
        self.meta.setTextFormat(Qt.TextFormat.RichText)
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta.setWordWrap(True)
        lay.addWidget(self.meta)
        caption = QLabel("PAIRS WITH", self)
        caption.setObjectName("PanelTitle")
        lay.addWidget(caption)
        self.pairs_status = QLabel("", self)
        self.pairs_status.setObjectName("Muted")
        self.pairs_status.setWordWrap(True)
        lay.addWidget(self.pairs_status)
        self.pairs = QListWidget(self)
        self.pairs.setObjectName("PairsList")
        self.pairs.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.pairs.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        lay.addWidget(self.pairs, 1)
        self.show_model(None)

    def show_model(self, model: LocalModel | None, library: list[LocalModel] | None = None) -> None:
        self.model = model
        self.library = library if library is not None else self.library
        if self._task is not None:
            self._task.cancel()
        self.pairs.clear()
        has = model is not None
        for b in (self.load_target, self.load_draft, self.reveal):
            b.setEnabled(has and model is not None and model.complete and model.info is not None)
        self.reveal.setEnabled(has)
        self.remove.setEnabled(has and model is not None and model.managed)
        self.remove.setToolTip("" if model is None or model.managed else
                               "Specula only indexes this folder; remove the file there.")
        if model is None:
            self.title.setText("Select a model")
            self.meta.setText("")
            self.pairs_status.setText("")
            return
        self.title.setText(model.info.display_name if model.info else model.name)
        self.meta.setText(metadata_html(model))
        self.pairs_status.setText("Checking which library models pair with it…")
        others = list(self.library)

        def work(ctx: TaskContext) -> Pairs:
            return pairs_for(model, others, ctx.cancel_event)

        self._task = start_task(self, work, on_done=self._show_pairs, on_failed=self._pairs_failed)

    def _show_pairs(self, pairs: Pairs) -> None:
        self.pairs.clear()
        self._add_rows("Draft for it", pairs.drafts)
        self._add_rows("Target it drafts for", pairs.targets)
        total = len(pairs.drafts) + len(pairs.targets)
        if total == 0:
            self.pairs_status.setText("No library model pairs with this one.")
        else:
            self.pairs_status.setText(f"{len(pairs.drafts)} draft(s) for it, "
                                      f"{len(pairs.targets)} target(s) it can draft for.")
        self.pairs_ready.emit(pairs)

    def _add_rows(self, role: str, pairs: list[Pair]) -> None:
        for p in pairs:
            mark = "✓" if p.report.verdict.value == "identical" else "≈"
            name = p.model.info.display_name if p.model.info else p.model.name
            item = QListWidgetItem(f"{mark} {role}: {name}\n     {p.model.name} · "
                                   f"{human_size(p.model.size)}")
            item.setToolTip(f"{p.model.path}\n{p.report.reason()}")
            item.setData(PATH_ROLE, str(p.model.path))
            self.pairs.addItem(item)

    def _pairs_failed(self, error: TaskError) -> None:
        self.pairs_status.setText(f"Could not check pairs: {error.message}")

    def _load(self, kind: str) -> None:
        if self.model is not None:
            self.load_requested.emit(kind, str(self.model.path))
