"""Pairs worth trying before any search: from the library, then popular ones on the hub.

Why: a new user opening Discover has typed nothing yet; the useful first view
is a few complete pairs (a target and the draft that suits it) that can be
loaded or downloaded in one click. Library pairs come first (the loaded
target's best draft, then the largest library models with theirs); then the
most downloaded GGUF repositories for a query (coder models by default),
each paired with its best hub draft. Every pair is decided by
:mod:`specula.core.pairing.drafts`, like every other view.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.hub.client import HubClient
from specula.core.hub.errors import HubError
from specula.core.hub.partial_files import local_path
from specula.core.hub.remote_header import read_remote_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.drafts import (
    DraftCandidate,
    hub_drafts,
    library_pairs,
    pick_file,
    same_file,
)
from specula.core.pairing.names import family_key, model_scale, size_from_name

DEFAULT_QUERY = "coder"
MIN_TARGET = 1e9  # smaller models are drafts, not targets worth speeding up


@dataclass(frozen=True)
class End:
    """One side of a pair: a library file or a hub file."""

    name: str  # the model's display name
    source: str  # a local path, or "owner/repo/file" on the hub
    location: str  # "library" or "hub"
    size: int | None

    @property
    def repo_file(self) -> tuple[str, str] | None:
        """(repo id, file name) of a hub file."""
        if self.location != "hub":
            return None
        owner, repo, filename = self.source.split("/", 2)
        return f"{owner}/{repo}", filename


@dataclass(frozen=True)
class SuggestedPair:
    target: End
    draft: End
    why: str  # "the loaded target's best draft", "in your library", "popular on the hub"
    reasons: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        """Both files are in the library: one click loads the pair."""
        return self.target.location == self.draft.location == "library"


@dataclass
class Suggestions:
    pairs: list[SuggestedPair] = field(default_factory=list)
    hub_error: str = ""

    def add(self, more: list[SuggestedPair]) -> None:
        """Append the pairs not listed yet: the same two files (wherever their copies are,
        in the library or on the hub) are one pair."""
        listed = {_files(p) for p in self.pairs}
        for p in more:
            if _files(p) not in listed:
                listed.add(_files(p))
                self.pairs.append(p)


def _files(p: SuggestedPair) -> tuple[tuple[str, int | None], tuple[str, int | None]]:
    return (same_file(PurePosixPath(p.target.source).name, p.target.size),
            same_file(PurePosixPath(p.draft.source).name, p.draft.size))


def _local_end(model: LocalModel, info: ModelInfo) -> End:
    return End(info.display_name, str(model.path), "library", model.size)


def _draft_end(c: DraftCandidate) -> End:
    return End(c.info.display_name, c.source, c.location, c.size)


def library_suggestions(library: list[LocalModel], loaded: ModelInfo | None = None, *,
                        limit: int = 3, cancel: threading.Event | None = None) -> list[SuggestedPair]:
    """The loaded target with its best draft, then the largest library models with theirs."""
    out: list[SuggestedPair] = []
    seen: set[str] = set()
    if loaded is not None:
        pairs = library_pairs(loaded, library, path=Path(loaded.source), cancel=cancel)
        if pairs.drafts:
            best = pairs.drafts[0]
            out.append(SuggestedPair(End(loaded.display_name, loaded.source, "library",
                                         loaded.file_size), _draft_end(best),
                                     "the loaded target's best draft", tuple(best.reasons)))
            seen.add(Path(loaded.source).name)
    usable = [m for m in library if m.info is not None and m.complete]
    usable.sort(key=lambda m: -(model_scale(m.info, m.name) or 0))  # type: ignore[arg-type]
    for model in usable:
        if len(out) >= limit or (cancel is not None and cancel.is_set()):
            break
        if model.name in seen:
            continue
        seen.add(model.name)
        try:
            info = read_model_info(model.path)
        except (GGUFError, OSError):
            continue
        pairs = library_pairs(info, library, path=model.path, name=model.name, cancel=cancel)
        if pairs.drafts:
            best = pairs.drafts[0]
            out.append(SuggestedPair(_local_end(model, info), _draft_end(best), "in your library",
                                     tuple(best.reasons)))
    return out


def hub_suggestions(hub: HubClient, models_dir: Path | None = None, *, query: str = DEFAULT_QUERY,
                    limit: int = 2, check: Callable[[], None] = lambda: None,
                    library: list[LocalModel] | None = None) -> list[SuggestedPair]:
    """The most downloaded GGUF targets for ``query``, one per family, each with its best draft.

    A file already downloaded into ``models_dir``, or the same file (name and size) in any
    ``library`` folder, is shown as the library copy.
    """
    have = {same_file(m.name, m.size): m for m in library or []}
    out: list[SuggestedPair] = []
    families: set[str] = set()
    for summary in hub.search(query, limit=20):
        if len(out) >= limit:
            break
        check()
        name = summary.repo_id.split("/")[1]
        size, family = size_from_name(name), family_key(name)
        if size is None or size < MIN_TARGET or family in families:
            continue
        try:
            chosen = pick_file(hub.list_files(summary.repo_id, with_description=False).models,
                               None)
            if chosen is None:
                continue
            info = read_remote_info(summary.repo_id, chosen.filename, hub)
            found = hub_drafts(info, summary.repo_id, hub=hub, max_repos=2)
        except (HubError, GGUFError):
            continue  # one repository that cannot be read does not spoil the others
        if not found.candidates:
            continue
        families.add(family)
        target = End(info.display_name, f"{summary.repo_id}/{chosen.filename}", "hub",
                     chosen.total_size)
        best = found.candidates[0]
        out.append(SuggestedPair(_downloaded(target, models_dir, have),
                                 _downloaded(_draft_end(best), models_dir, have),
                                 "popular on the hub", tuple(best.reasons)))
    return out


def _downloaded(end: End, models_dir: Path | None,
                have: dict[tuple[str, int | None], LocalModel]) -> End:
    """The library copy of a hub file when it is in the library already."""
    where = end.repo_file
    if where is None:
        return end
    twin = have.get(same_file(where[1], end.size))
    if twin is not None:
        return End(end.name, str(twin.path), "library", end.size)
    path = local_path(models_dir, *where) if models_dir is not None else None
    return End(end.name, str(path), "library", end.size) if path and path.is_file() else end
