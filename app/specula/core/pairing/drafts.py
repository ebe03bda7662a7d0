"""Which drafts suit a target: the one decision every view asks, for the library and the hub.

A draft suits a target when llama.cpp accepts the pair (``compat.check``) and
the draft is smaller than the target (a model as large as the target gains
nothing). Among suitable drafts, the same tokenizer fingerprint (every token
identical), "much smaller" and the same family (``Qwen2.5-Coder-0.5B`` for
``Qwen2.5-Coder-7B``) accept the most tokens and rank first. The chat's draft
picker, My Models' "pairs with", Discover's drafts panel, the badges and
``specula models drafts`` all call :func:`judge` through the functions here,
so they cannot disagree. The same file found twice (in two folders, or once
downloaded and once on the hub) is one candidate. Hub candidates are found
by searching the target's family name and keeping smaller siblings, then
verified by reading their remote headers, so nothing is recommended on its
name alone.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath

from specula.core.gguf.compat import VOCAB_MAX_SIZE_DIFFERENCE, CompatReport, Verdict, check
from specula.core.gguf.draft_head import is_head
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.hub.client import HubClient, RemoteModel
from specula.core.hub.errors import HubError
from specula.core.hub.remote_header import read_remote_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.names import family_key, family_prefix, model_scale, size_from_name

MUCH_SMALLER = 4.0  # a draft at most a quarter of the target counts as "much smaller"
SAME_SIZE = 0.02  # within 2% of each other: the same size, no speed-up either way
_PREFERRED_QUANTS = ("Q8_0", "Q4_K_M", "Q6_K", "Q5_K_M", "Q4_0", "F16", "BF16", "F32")

__all__ = ["DraftCandidate", "HubDrafts", "LibraryPairs", "Role", "family_key", "family_prefix",
           "hub_drafts", "judge", "library_drafts", "library_pairs", "merge_hub", "pick_file",
           "role_of", "same_file", "size_from_name"]


class Role(str, Enum):
    """What another model is to this one, by size alone."""

    DRAFT = "draft"  # smaller: it can draft for this one
    TARGET = "target"  # larger: this one can draft for it
    SAME = "same size"  # no speed-up either way
    UNKNOWN = "unknown"  # a size could not be told


def role_of(mine: float | None, other: float | None) -> Role:
    """The other model's role for this one, from the two scales (see ``model_scale``)."""
    if mine is None or other is None:
        return Role.UNKNOWN
    if abs(mine - other) <= SAME_SIZE * max(mine, other):
        return Role.SAME
    return Role.DRAFT if other < mine else Role.TARGET


def same_file(name: str, size: int | None) -> tuple[str, int | None]:
    """What makes two copies one file: its name and its size (folders and hubs do not matter)."""
    return PurePosixPath(name).name.lower(), size


@dataclass
class DraftCandidate:
    """A model that pairs with the one asked about (a draft for a target, or a target for a draft).

    ``info`` and ``source`` are the other model's; ``report`` is always
    ``check(target, draft)``.
    """

    source: str  # a local path or "owner/repo/file"
    location: str  # "library" or "hub"
    info: ModelInfo
    report: CompatReport
    size: int | None  # bytes on disk or to download
    reasons: list[str] = field(default_factory=list)
    rank: tuple[int, int, int, float] = (9, 9, 9, 0.0)
    suits: bool = False  # usable and smaller: worth offering
    model: LocalModel | None = None  # the library entry, for a library candidate
    hub_source: str = ""  # "owner/repo/file" when this library file is also the hub's

    @property
    def name(self) -> str:
        return PurePosixPath(self.source).name

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "location": self.location, "size": self.size,
                "verdict": self.report.verdict.value, "usable": self.report.usable,
                "reason": self.report.reason(), "reasons": self.reasons,
                "parameters": self.info.parameter_count, "quantization": self.info.quantization,
                "report": self.report.to_dict()}


def judge(target: ModelInfo, target_name: str, draft: ModelInfo, draft_name: str,
          source: str, location: str, size: int | None) -> DraftCandidate:
    """THE decision: does ``draft`` suit ``target``, why, and how well (``rank``, lower is better)."""
    report = check(target, draft)
    t_scale, d_scale = model_scale(target, target_name), model_scale(draft, draft_name)
    role = role_of(t_scale, d_scale)
    ratio = t_scale / d_scale if t_scale and d_scale else 0.0
    same_tok = report.verdict is Verdict.IDENTICAL
    much = ratio >= MUCH_SMALLER
    family = family_key(draft_name) == family_key(target_name) or (
        bool(target.basename) and draft.basename == target.basename)
    reasons = ["same tokenizer" if same_tok else "compatible tokenizer"]
    if role is Role.DRAFT:
        reasons.append(f"{ratio:.1f}x smaller")
    elif role is Role.SAME:
        reasons.append("as large as the target (no speed-up)")
    elif role is Role.TARGET:
        reasons.append("larger than the target")
    if family:
        reasons.append("same family")
    rank = (0 if same_tok else 1, 0 if much else 1, 0 if family else 1, d_scale or 0.0)
    suits = report.usable and role in (Role.DRAFT, Role.UNKNOWN)
    return DraftCandidate(source, location, draft, report, size, reasons, rank, suits)


def plausible(a: ModelInfo, b: ModelInfo) -> bool:
    """llama.cpp's cheapest blocking rules, checked on index summaries before reading tokens."""
    if a.tokenizer_model != b.tokenizer_model:
        return False
    if a.vocab_size is None or b.vocab_size is None:
        return True
    return abs(a.vocab_size - b.vocab_size) <= VOCAB_MAX_SIZE_DIFFERENCE


@dataclass
class LibraryPairs:
    drafts: list[DraftCandidate] = field(default_factory=list)  # smaller models that draft for it
    targets: list[DraftCandidate] = field(default_factory=list)  # larger models it drafts for
    unreadable: list[str] = field(default_factory=list)


def library_pairs(model: ModelInfo, library: list[LocalModel], *, path: Path | None = None,
                  name: str | None = None, cancel: threading.Event | None = None) -> LibraryPairs:
    """The library models that pair with ``model`` (a full ModelInfo), each file once, best first.

    ``path`` (the model's own file) and any copy of it elsewhere are left out.
    """
    my_name = name or Path(model.source).name
    my_scale = model_scale(model, my_name)
    me = same_file(my_name, model.file_size)
    own = path.resolve() if path is not None else None
    seen: set[tuple[str, int | None]] = set()
    out = LibraryPairs()
    for other in library:
        if cancel is not None and cancel.is_set():
            break
        if other.info is None or not other.complete or is_head(other.info):
            continue  # a draft head pairs through pairing.heads, never as a model
        key = same_file(other.name, other.info.file_size)
        if key == me or key in seen or (own is not None and other.path.resolve() == own):
            continue
        if not plausible(model, other.info):
            continue
        try:
            full = read_model_info(other.path)
        except (GGUFError, OSError) as exc:
            out.unreadable.append(f"{other.name}: {exc}")
            continue
        role = role_of(my_scale, model_scale(full, other.name))
        if role in (Role.DRAFT, Role.UNKNOWN):
            cand = judge(model, my_name, full, other.name, str(other.path), "library", other.size)
            chosen = out.drafts if cand.suits else None
        elif role is Role.TARGET:
            cand = judge(full, other.name, model, my_name, str(other.path), "library", other.size)
            cand.info = full  # the other model's header, as for drafts
            chosen = out.targets if cand.report.usable else None
        else:
            continue
        if chosen is not None:
            seen.add(key)
            cand.model = other
            chosen.append(cand)
    out.drafts.sort(key=lambda c: c.rank)
    out.targets.sort(key=lambda c: (c.rank[0], c.size or 0))
    return out


def library_drafts(target: ModelInfo, models: list[LocalModel],
                   target_path: Path | None = None) -> list[DraftCandidate]:
    """The drafts among ``models`` that suit ``target`` (a full ModelInfo), best first."""
    return library_pairs(target, models, path=target_path).drafts


def merge_hub(local: list[DraftCandidate], hub: list[DraftCandidate]) -> list[DraftCandidate]:
    """The hub candidates that are not already in the library; the library copies learn their
    hub source (so a view can say "downloaded" and offer Load instead of Download)."""
    by_file = {same_file(c.name, c.size): c for c in local}
    by_repo = {f"{c.model.repo_id}/{c.name}": c for c in local
               if c.model is not None and c.model.repo_id}
    out = []
    for c in hub:
        twin = by_repo.get(c.source) or by_file.get(same_file(c.name, c.size))
        if twin is None:
            out.append(c)
        else:
            twin.hub_source = c.source
    return out


def pick_file(models: list[RemoteModel], target_quant: str | None) -> RemoteModel | None:
    usable = [m for m in models if m.complete]
    if not usable:
        return None
    for quant in (target_quant, *_PREFERRED_QUANTS):
        for m in usable:
            if quant and m.quantization == quant:
                return m
    return min(usable, key=lambda m: m.total_size or 0)


@dataclass
class HubDrafts:
    candidates: list[DraftCandidate]  # usable, best first
    rejected: list[DraftCandidate]  # read and checked, but the tokenizers do not match
    skipped: list[str]  # repositories that could not be checked, with why
    query: str

    def to_dict(self) -> dict[str, object]:
        return {"query": self.query, "candidates": [c.to_dict() for c in self.candidates],
                "rejected": [c.to_dict() for c in self.rejected], "skipped": self.skipped}


def hub_drafts(target: ModelInfo, target_repo: str | None = None, *, hub: HubClient | None = None,
               max_repos: int = 4) -> HubDrafts:
    """Smaller siblings of the target's family on the hub, verified by their remote headers."""
    hub = hub or HubClient()
    name = target_repo.split("/")[1] if target_repo else (target.basename or target.name or
                                                           Path(target.source).stem)
    query = family_prefix(name)
    t_scale = size_from_name(name) or model_scale(target, name)
    key = family_key(name)
    repos = []
    for summary in hub.search(query, limit=40):
        if summary.repo_id == target_repo:
            continue
        repo_name = summary.repo_id.split("/")[1]
        size = size_from_name(repo_name)
        if size is None or (t_scale and size >= t_scale):
            continue
        same_family = family_key(repo_name) == key
        repos.append((0 if same_family else 1, size, summary.repo_id))
    result = HubDrafts([], [], [], query)
    for _, _, repo_id in sorted(repos)[:max_repos]:
        try:
            listing = hub.list_files(repo_id, with_description=False)
            chosen = pick_file(listing.models, target.quantization)
            if chosen is None:
                result.skipped.append(f"{repo_id}: no complete GGUF file")
                continue
            info = read_remote_info(repo_id, chosen.filename, hub)
        except (HubError, GGUFError) as exc:
            result.skipped.append(f"{repo_id}: {exc}")
            continue
        cand = judge(target, name, info, repo_id.split("/")[1],
                     f"{repo_id}/{chosen.filename}", "hub", chosen.total_size)
        (result.candidates if cand.suits else result.rejected).append(cand)
    result.candidates.sort(key=lambda c: c.rank)
    return result
