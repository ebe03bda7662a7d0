"""Which draft for this target? Ranked candidates from the library and from the hub.

A draft is worth offering when llama.cpp accepts it (``compat.check``) and it
is much smaller than the target; among those, the same tokenizer fingerprint
(every token identical) and the same family (``Qwen2.5-Coder-0.5B`` for
``Qwen2.5-Coder-7B``) accept the most tokens. Hub candidates are found by
searching the target's family name and keeping smaller siblings, then verified
by reading their remote headers, so nothing is recommended on its name alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from specula.core.gguf.compat import VOCAB_MAX_SIZE_DIFFERENCE, CompatReport, Verdict, check
from specula.core.gguf.model_info import (
    GGUFError,
    ModelInfo,
    quantization_from_name,
    read_model_info,
)
from specula.core.hub.client import HubClient, RemoteModel
from specula.core.hub.errors import HubError
from specula.core.hub.remote_header import read_remote_info
from specula.core.library.scan import LocalModel

MUCH_SMALLER = 4.0  # a draft at most a quarter of the target counts as "much smaller"
_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([BM])(?![A-Za-z0-9])", re.IGNORECASE)
_PREFERRED_QUANTS = ("Q8_0", "Q4_K_M", "Q6_K", "Q5_K_M", "Q4_0", "F16", "BF16", "F32")


def size_from_name(name: str) -> float | None:
    """Parameters a name states: 'Qwen2.5-Coder-7B-Instruct' -> 7e9, '...-500M' -> 5e8."""
    found = _SIZE.findall(name)
    if not found:
        return None
    number, unit = found[0]
    return float(number) * (1e9 if unit.upper() == "B" else 1e6)


def family_prefix(name: str) -> str:
    """The family part of a name, before its size: 'Qwen2.5-Coder-7B-Instruct-GGUF' -> 'Qwen2.5-Coder'."""
    stem = PurePosixPath(name).name.removesuffix(".gguf")
    m = _SIZE.search(stem)
    head = stem[: m.start()] if m else stem
    return head.strip(" -_.") or stem


def family_key(name: str) -> str:
    """A name without size, quantization and 'GGUF', for same-family comparisons."""
    stem = PurePosixPath(name).name.lower().removesuffix(".gguf")
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", stem)
    quant = quantization_from_name(stem + ".gguf")
    if quant:
        stem = re.sub(re.escape(quant.lower()) + r"$", "", stem)
    stem = _SIZE.sub("", stem).replace("gguf", "")
    return "-".join(p for p in re.split(r"[-_. ]+", stem) if p)


def _scale(info: ModelInfo, name: str) -> float | None:
    """How big a model is: parameters from its header, else from its name, else bytes."""
    if info.parameter_count:
        return float(info.parameter_count)
    return size_from_name(name) or (float(info.file_size) if info.file_size else None)


@dataclass
class DraftCandidate:
    source: str  # a local path or "owner/repo/file"
    location: str  # "library" or "hub"
    info: ModelInfo
    report: CompatReport
    size: int | None  # bytes on disk or to download
    reasons: list[str] = field(default_factory=list)
    rank: tuple[int, int, int, float] = (9, 9, 9, 0.0)

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "location": self.location, "size": self.size,
                "verdict": self.report.verdict.value, "usable": self.report.usable,
                "reason": self.report.reason(), "reasons": self.reasons,
                "parameters": self.info.parameter_count, "quantization": self.info.quantization,
                "report": self.report.to_dict()}


def _candidate(target: ModelInfo, target_name: str, draft: ModelInfo, draft_name: str,
               source: str, location: str, size: int | None) -> DraftCandidate:
    report = check(target, draft)
    t_scale, d_scale = _scale(target, target_name), _scale(draft, draft_name)
    ratio = t_scale / d_scale if t_scale and d_scale else 0.0
    same_tok = report.verdict is Verdict.IDENTICAL
    much = ratio >= MUCH_SMALLER
    family = family_key(draft_name) == family_key(target_name) or (
        bool(target.basename) and draft.basename == target.basename)
    reasons = ["same tokenizer" if same_tok else "compatible tokenizer"]
    if ratio:
        reasons.append(f"{ratio:.1f}x smaller")
    if family:
        reasons.append("same family")
    rank = (0 if same_tok else 1, 0 if much else 1, 0 if family else 1, d_scale or 0.0)
    return DraftCandidate(source, location, draft, report, size, reasons, rank)


def _plausible(target: ModelInfo, draft: ModelInfo) -> bool:
    """llama.cpp's cheapest blocking rules, checked on index summaries before reading tokens."""
    if target.tokenizer_model != draft.tokenizer_model:
        return False
    if target.vocab_size is None or draft.vocab_size is None:
        return True
    return abs(target.vocab_size - draft.vocab_size) <= VOCAB_MAX_SIZE_DIFFERENCE


def library_drafts(target: ModelInfo, models: list[LocalModel],
                   target_path: Path | None = None) -> list[DraftCandidate]:
    """Usable, smaller drafts among ``models`` for ``target`` (a full ModelInfo), best first."""
    target_name = Path(target.source).name
    t_scale = _scale(target, target_name)
    same = target_path.resolve() if target_path else None
    out = []
    for model in models:
        if model.info is None or not model.complete:
            continue
        if same is not None and model.path.resolve() == same:
            continue
        d_scale = _scale(model.info, model.name)
        if t_scale and d_scale and d_scale >= t_scale:
            continue  # not smaller: no speed-up to gain
        if not _plausible(target, model.info):
            continue
        try:
            full = read_model_info(model.path)
        except GGUFError:
            continue
        cand = _candidate(target, target_name, full, model.name, str(model.path), "library",
                          model.size)
        if cand.report.usable:
            out.append(cand)
    return sorted(out, key=lambda c: c.rank)


def _pick_file(models: list[RemoteModel], target_quant: str | None) -> RemoteModel | None:
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
    t_scale = size_from_name(name) or _scale(target, name)
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
            chosen = _pick_file(listing.models, target.quantization)
            if chosen is None:
                result.skipped.append(f"{repo_id}: no complete GGUF file")
                continue
            info = read_remote_info(repo_id, chosen.filename, hub)
        except (HubError, GGUFError) as exc:
            result.skipped.append(f"{repo_id}: {exc}")
            continue
        cand = _candidate(target, name, info, repo_id.split("/")[1],
                          f"{repo_id}/{chosen.filename}", "hub", chosen.total_size)
        (result.candidates if cand.report.usable else result.rejected).append(cand)
    result.candidates.sort(key=lambda c: c.rank)
    return result
