"""Which draft heads (EAGLE-3, DFlash, DSpark) suit a target: the library's and the hub's.

Why apart from :mod:`specula.core.pairing.drafts`: a head is not a smaller model of the
same family. It borrows the target's embeddings and reads a few of its layers, so
whether it fits is :func:`specula.core.gguf.draft_head.head_misfits` (hidden size,
layer ids, vocabulary), never the tokenizer-and-size judgement of a draft model. A head
is never offered as a target nor as a draft model; the chat's draft picker lists the
heads from here beside the draft models, the fitting ones usable and the others disabled
with the reasons, and Discover asks the hub for heads named after the loaded target.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from specula.core.gguf.draft_head import HeadInfo, head_info_from_header, head_misfits, is_head
from specula.core.gguf.model_info import GGUFError, ModelInfo, model_info_from_header
from specula.core.gguf.reader import FileSource, read_header
from specula.core.hub.client import HubClient
from specula.core.hub.errors import HubError
from specula.core.hub.remote_header import RemoteSource
from specula.core.library.scan import LocalModel
from specula.core.safe_text import display_text

HEAD_LABELS = {"eagle3": "EAGLE-3 head", "dflash": "DFlash head", "dspark": "DSpark head"}
HEAD_WORDS = ("eagle", "dflash", "dspark")  # what a head repository's name says it holds


def head_label(kind: str) -> str:
    """How every view names a head of ``kind`` ("EAGLE-3 head")."""
    return HEAD_LABELS.get(kind, f"{kind} head")


def mode_label(mode: str) -> str:
    """A reply's mode as the live panel and the footer say it: a head's mode by the head
    ("eagle3" -> "EAGLE-3 head"), the others as they are."""
    return HEAD_LABELS.get(mode, mode)


def is_head_file(model: LocalModel) -> bool:
    """A library file that is a draft head (its header's architecture): never a target."""
    return model.info is not None and is_head(model.info)


@dataclass(frozen=True)
class HeadChoice:
    """A head file for the loaded target: usable when it fits, else why not."""

    source: str  # a local path or "owner/repo/file"
    kind: str  # "eagle3", "dflash" or "dspark"
    misfits: tuple[str, ...]  # empty: it fits
    description: str  # HeadInfo.describe()
    size: int | None = None

    @property
    def usable(self) -> bool:
        return not self.misfits

    @property
    def label(self) -> str:
        return head_label(self.kind)

    @property
    def name(self) -> str:
        return Path(self.source).name

    @property
    def reason(self) -> str:
        """Why it cannot draft for the target, in one line ("" when it can)."""
        return "; ".join(self.misfits)


def _choice(target: ModelInfo, head: HeadInfo, source: str, size: int | None) -> HeadChoice:
    return HeadChoice(source, head.kind, tuple(head_misfits(target, head)), head.describe(), size)


def library_heads(target: ModelInfo, library: list[LocalModel],
                  recent: list[str] | None = None) -> list[HeadChoice]:
    """The heads among the library and the ``recent`` draft files (the picker's memory),
    checked against ``target`` (a full ModelInfo): fitting ones first, each file once.
    Reads headers: run it off the GUI thread."""
    files: list[tuple[Path, int | None]] = [(m.path, m.size) for m in library
                                            if m.complete and is_head_file(m)]
    files += [(Path(p), None) for p in recent or []]
    out: list[HeadChoice] = []
    seen: set[str] = set()
    for path, size in files:
        try:
            real = str(path.resolve())
            if real in seen:
                continue
            seen.add(real)
            header = read_header(FileSource(path))
        except (GGUFError, OSError):
            continue  # unreadable: the library and the draft list already say so
        if not is_head(model_info_from_header(header)):
            continue  # a draft model among the recent files
        try:
            head = head_info_from_header(header)
        except GGUFError as exc:  # a head llama.cpp would refuse: listed, disabled, why
            arch = header.fields.get("general.architecture")
            out.append(HeadChoice(str(path), "dflash" if arch == "dflash" else "eagle3",
                                  (display_text(exc.problem),), "", size))
            continue
        out.append(_choice(target, head, str(path), size))
    out.sort(key=lambda c: (not c.usable, c.kind, c.name))
    return out


@dataclass
class HubHeads:
    """Heads on the hub for a target: the ones that fit, the ones that do not (with why),
    and the repositories that could not be read."""

    query: str
    fitting: list[HeadChoice] = field(default_factory=list)
    misfitting: list[HeadChoice] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def head_query(target: ModelInfo, target_repo: str | None = None) -> str:
    """What to search the hub for: the target's name (its repository's, without "-GGUF")."""
    name = target_repo.split("/")[1] if target_repo else (
        target.name or target.basename or Path(target.source).stem)
    for suffix in ("-GGUF", "-gguf", "_GGUF"):
        name = name.removesuffix(suffix)
    return name


def hub_heads(target: ModelInfo, target_repo: str | None = None, *,
              hub: HubClient | None = None, max_repos: int = 6,
              cancel: threading.Event | None = None) -> HubHeads:
    """The hub's heads named after ``target``: repositories found by the target's name whose
    own name says a head kind ("…-EAGLE3", "…_dflash"), each file read from its remote
    header and checked with :func:`head_misfits` (nothing is offered on its name alone).
    HubError when the search itself fails."""
    hub = hub or HubClient()
    result = HubHeads(head_query(target, target_repo))
    repos = [s.repo_id for s in hub.search(result.query, limit=100)
             if s.repo_id != target_repo and any(w in s.repo_id.lower() for w in HEAD_WORDS)]
    for repo_id in repos[:max_repos]:
        if cancel is not None and cancel.is_set():
            break
        try:
            listing = hub.list_files(repo_id, with_description=False)
        except HubError as exc:
            result.skipped.append(f"{repo_id}: {exc}")
            continue
        for remote in listing.models:
            if not remote.complete:
                continue
            try:
                header = read_header(RemoteSource(repo_id, remote.filename, hub=hub))
                head = head_info_from_header(header)
            except GGUFError:
                continue  # a model, not a head (or a head llama.cpp would refuse)
            except HubError as exc:
                result.skipped.append(f"{repo_id}/{remote.filename}: {exc}")
                continue
            c = _choice(target, head, f"{repo_id}/{remote.filename}", remote.total_size)
            (result.fitting if c.usable else result.misfitting).append(c)
    return result


__all__ = ["HEAD_LABELS", "HeadChoice", "HubHeads", "head_label", "head_query", "hub_heads",
           "is_head_file", "library_heads", "mode_label"]
