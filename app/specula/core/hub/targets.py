"""Turn what a user typed (a local path or ``owner/repo/file.gguf``) into a described model.

Why one place: ``drafts-for``, ``fit`` and the GUI all accept either form, and
all need the same three things: the full ModelInfo (with tokenizer), where the
model lives, and how many bytes of weights it has (all parts of a split model).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.gguf.split import parse_split, part_names
from specula.core.hub.client import HubClient, split_target
from specula.core.hub.errors import ErrorKind, HubError
from specula.core.hub.remote_header import read_remote_info


@dataclass
class ResolvedModel:
    spec: str
    info: ModelInfo
    weights: int | None  # bytes of all parts
    path: Path | None = None  # local file (first part)
    repo_id: str | None = None  # hub repository, for a remote model
    filename: str | None = None


def resolve_model(spec: str, *, hub: HubClient | None = None,
                  models_dir: Path | None = None) -> ResolvedModel:
    """Describe ``spec``; raises GGUFError (bad file) or HubError (remote trouble, bad spec)."""
    local = Path(spec).expanduser()
    if not local.exists() and models_dir is not None and (models_dir / spec).exists():
        local = models_dir / spec
    if local.is_file():
        parts = [local.with_name(n) for n in part_names(local.name)]
        info = read_model_info(parts[0] if parts[0].exists() else local)
        on_disk = sum(p.stat().st_size for p in parts if p.exists())
        return ResolvedModel(spec, info, on_disk, parts[0] if parts[0].exists() else local)
    remote = split_target(spec)
    if remote is None:
        raise HubError(ErrorKind.INVALID, f"{spec} is neither a GGUF file here nor "
                       "a hub file (owner/repo/file.gguf)")
    repo_id, filename = remote
    hub = hub or HubClient()
    first = part_names(filename)[0]
    info = read_remote_info(repo_id, first, hub)
    weights = info.file_size
    if parse_split(first) is not None:
        sizes = hub.lfs_info(repo_id, part_names(first))
        weights = sum(f.size or 0 for f in sizes.values())
    return ResolvedModel(spec, info, weights, None, repo_id, first)
