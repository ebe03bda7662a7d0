"""What the model bar shows, worked out without Qt: the draft picker's rows and the status line.

The draft candidates are checked against the chosen target in the background
(headers only, :func:`check_drafts`): compatible drafts first, incompatible
ones disabled with the reason in one sentence. :func:`draft_rows` turns them
into the picker's rows (the target's built-in MTP head first when it has one,
then "No draft", then the draft heads found for the target (:func:`check_heads`),
then the files) and says which row is chosen;
:func:`status_text` is the line under the pickers. The widgets only paint these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specula.core.gguf.compat import check
from specula.core.gguf.draft_head import HeadInfo, is_head
from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.library.labels import describe, label_for
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import plural
from specula.core.pairing.choices import draft_choices
from specula.core.pairing.heads import HeadChoice, head_label, library_heads
from specula.core.pairing.pair_status import why_not  # the one wording of a refusal

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


@dataclass(frozen=True)
class DraftRow:
    """One row of the draft picker."""

    text: str
    path: str  # BUILTIN_MTP for the target's own head, "" for "No draft"
    usable: bool | None = None  # None: not a file (the head, "No draft")
    detail: str = ""
    tooltip: str = ""


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
        if path in listed or m.info is None or not m.complete or is_head(m.info) or \
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


def check_heads(target: str, recent: list[str], library: list[LocalModel]) -> list[HeadChoice]:
    """The draft heads among the library and the recent drafts, checked against ``target``
    (:func:`specula.core.pairing.heads.library_heads`; reads headers, off the GUI thread)."""
    return library_heads(read_model_info(target), library, recent)


def head_row(head: HeadChoice) -> DraftRow:
    """A head's row: "EAGLE-3 head  (file)", or disabled with the first reason it misfits."""
    text = f"{head.label}  ({head.name})"
    if head.usable:
        # no detail: a narrow box cuts the text at its end and keeps "EAGLE-3 head"
        return DraftRow(text, head.source, True, "", f"{head.source}\n{head.description}")
    return DraftRow(f"{text}  — incompatible: {head.misfits[0]}", head.source, False,
                    "incompatible", f"{head.source}\nThis head cannot draft for the target: "
                                    f"{head.reason}.")


def builtin_label(n_layers: int) -> str:
    """The picker's entry for a target that drafts with its own MTP layers."""
    return f"Built-in (MTP, {n_layers} layer{'s' if n_layers != 1 else ''})"


def draft_rows(entries: list[DraftEntry], n_mtp: int, builtin_on: bool,
               current: str, heads: list[HeadChoice] | None = None) -> tuple[list[DraftRow], int]:
    """The picker's rows and the row to choose: the target's built-in MTP draft first when
    it has ``n_mtp`` layers (chosen while ``builtin_on``), "No draft", the draft ``heads``
    (fitting ones usable), then the files (the usable head or file at ``current`` chosen)."""
    rows: list[DraftRow] = []
    if n_mtp > 0:
        rows.append(DraftRow(builtin_label(n_mtp), BUILTIN_MTP, True, tooltip=(
            "The target's own multi-token-prediction layers draft: "
            "no draft model to load, exact like any draft")))
    rows.append(DraftRow("No draft", ""))
    select = (0 if builtin_on else 1) if n_mtp > 0 else 0
    for h in heads or []:
        rows.append(head_row(h))
        if h.usable and h.source == current:
            select = len(rows) - 1
    for e in entries:
        head = f"{e.name}  {e.detail}" if e.detail else e.name
        why = (e.short or e.reason).rstrip(".")
        rows.append(DraftRow(head if e.usable else f"{head}  — incompatible: {why}", e.path,
                             e.usable, e.detail if e.usable else "incompatible",
                             f"{e.path}\n{e.reason}"))
        if e.usable and e.path == current:
            select = len(rows) - 1
    return rows, select


def status_text(target: ModelInfo | None, backend: str, n_threads: int, *,
                draft: ModelInfo | None = None, pending_draft: str = "",
                builtin_layers: int = 0, head: HeadInfo | None = None) -> str:
    """The status line: one line per model ("·" never starts a wrapped line: a no-break
    space before it). ``pending_draft`` names a draft still loading; ``head`` a loaded
    draft head; ``builtin_layers`` the target's MTP head when no draft file is loaded."""
    if target is None:
        return "No model loaded. Open a GGUF file to start."
    text = f"Target: {describe(target)} · on {backend}, {plural(n_threads, 'thread')}"
    if pending_draft:
        text += f"\nDraft: loading {pending_draft}…"
    elif draft is not None:
        text += f"\nDraft: {describe(draft)}"
    elif head is not None:
        text += f"\nDraft: {head_label(head.kind)} ({Path(head.source).name})"
    elif builtin_layers:
        text += f"\nDraft: {builtin_label(builtin_layers)}"
    else:
        text += "\nNo draft"
    return text.replace(" · ", "\u00a0· ")
