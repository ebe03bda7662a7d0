"""The local model library: one models folder plus folders the user adds.

Downloads land in ``<models>/<owner>/<repo>/<file>.gguf``. Other folders
(LM Studio's ``~/.lmstudio/models``, the Hugging Face cache
``~/.cache/huggingface/hub`` whose snapshot files are symlinks to blobs) are
indexed where they are, never copied, and never deleted from: Specula only
removes what it downloaded. Split models appear once (their first part, which
is what llama.cpp loads). Headers are cached in a :class:`LibraryIndex`, so a
scan of an unchanged folder reads no GGUF at all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specula.core import paths
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.gguf.split import group_gguf, is_complete, part_names
from specula.core.hub.partial_files import incomplete_downloads, part_file, sidecar_file
from specula.core.library.found_folders import hf_hub_cache, lm_studio_dirs
from specula.core.library.index import IndexEntry, LibraryIndex


class LibraryError(ValueError):
    """A library operation refused (e.g. removing a file Specula does not own)."""


def resolve_models_dir(setting: str | os.PathLike[str] | None = None) -> Path:
    """``SPECULA_MODELS_DIR`` wins, then the settings value, then the default folder."""
    if os.environ.get("SPECULA_MODELS_DIR") or not setting:
        return paths.default_models_dir()
    folder = Path(setting).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def suggested_extra_dirs() -> list[Path]:
    """Folders other apps keep GGUF files in, when they exist on this machine (located as
    :mod:`specula.core.library.found_folders` locates them)."""
    return [p for p in (*lm_studio_dirs(), hf_hub_cache()) if p.is_dir()]


@dataclass
class LocalModel:
    """One model on disk: a GGUF file or the parts of a split one."""

    path: Path  # the file to load (first part of a split model)
    parts: list[Path]
    size: int  # all parts together
    root: Path  # the library folder it was found under
    repo_id: str | None
    info: ModelInfo | None  # from the header (no tokens); None when unreadable
    error: str | None = None
    complete: bool = True
    managed: bool = False  # inside the models folder: Specula may remove it

    @property
    def name(self) -> str:
        return self.path.name

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path), "parts": [str(p) for p in self.parts], "size": self.size,
            "root": str(self.root), "repo_id": self.repo_id, "complete": self.complete,
            "managed": self.managed, "error": self.error,
            "info": self.info.to_dict() if self.info else None,
        }


@dataclass
class ScanResult:
    models: list[LocalModel]
    read: int = 0  # headers parsed during this scan
    reused: int = 0  # headers served from the index
    vanished: list[str] = field(default_factory=list)  # indexed files that are gone
    changed: list[str] = field(default_factory=list)  # indexed files whose size/mtime moved


def _repo_id_for(root: Path, folder: Path) -> str | None:
    """``owner/repo`` from ``<root>/owner/repo/`` or an HF cache ``models--owner--repo``."""
    try:
        rel = folder.relative_to(root).parts
    except ValueError:
        return None
    if rel and rel[0].startswith("models--"):
        bits = rel[0][len("models--"):].split("--")
        return "/".join(bits[:2]) if len(bits) >= 2 else None
    return f"{rel[0]}/{rel[1]}" if len(rel) >= 2 else None


class Library:
    """Scan, describe and remove local models."""

    def __init__(self, models_dir: str | os.PathLike[str] | None = None,
                 extra_dirs: Sequence[str | os.PathLike[str]] = (),
                 index_path: Path | None = None) -> None:
        self.models_dir = resolve_models_dir(models_dir)
        self.extra_dirs = [Path(d).expanduser() for d in extra_dirs]
        self.index = LibraryIndex(index_path)

    @property
    def roots(self) -> list[Path]:
        return [self.models_dir, *[d for d in self.extra_dirs if d != self.models_dir]]

    def scan(self) -> ScanResult:
        """Every model in every folder; headers read only for new or changed files."""
        result = ScanResult([])
        seen_real: set[str] = set()
        for root in self.roots:
            if root.is_dir():
                self._scan_root(root, result, seen_real)
        for key in list(self.index.entries):
            if key not in seen_real:
                result.vanished.append(key)
                self.index.drop(key)
        self.index.save()
        result.models.sort(key=lambda m: (m.repo_id or "~", m.name.lower()))
        return result

    def _scan_root(self, root: Path, result: ScanResult, seen_real: set[str]) -> None:
        managed = root == self.models_dir
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            folder = Path(dirpath)
            for group in group_gguf(sorted(filenames)):
                files = [folder / name for name in group]
                reals = []
                for f in files:
                    try:
                        reals.append(f.resolve(strict=True))  # HF cache: snapshot -> blob
                    except OSError:
                        break
                if len(reals) != len(files) or str(reals[0]) in seen_real:
                    continue
                seen_real.update(str(r) for r in reals)
                model = self._describe(files, reals, root, result)
                model.managed = managed
                model.complete = is_complete(group)
                model.repo_id = _repo_id_for(root, folder)
                result.models.append(model)

    def _describe(self, files: list[Path], reals: list[Path], root: Path,
                  result: ScanResult) -> LocalModel:
        sizes = [r.stat().st_size for r in reals]
        first = reals[0]
        st = first.stat()
        key = str(first)
        entry = self.index.lookup(key, st.st_size, st.st_mtime_ns)
        if entry is not None:
            result.reused += 1
        else:
            if key in self.index.entries:
                result.changed.append(key)
            try:
                info: ModelInfo | None = read_model_info(files[0])
                error = None
            except GGUFError as exc:
                info, error = None, exc.problem
            if info is not None:
                info.tokenizer = None  # the index keeps summaries only
                info.chat_template = None
            entry = IndexEntry(st.st_size, st.st_mtime_ns, info, error)
            self.index.put(key, entry)
            result.read += 1
        return LocalModel(files[0], files, sum(sizes), root, None, entry.info, entry.error)

    def find(self, spec: str | os.PathLike[str]) -> LocalModel | None:
        """A model by path (any part) or by ``owner/repo/file`` inside the models folder."""
        candidates = [Path(spec).expanduser(), self.models_dir / spec]
        wanted = {str(p.resolve()) for p in candidates if p.exists()}
        for model in self.scan().models:
            if any(str(p.resolve()) in wanted for p in model.parts):
                return model
        return None

    def remove(self, spec: str | os.PathLike[str]) -> list[Path]:
        """Delete a downloaded model with all its parts and incomplete files; returns what went."""
        model = self.find(spec)
        if model is not None and not model.managed:
            raise LibraryError(f"{model.path} is not in the Specula models folder "
                               f"({self.models_dir}); Specula only indexes it, remove it there")
        first = model.path if model else self.models_dir / spec
        try:
            first.resolve().relative_to(self.models_dir.resolve())
        except ValueError:
            raise LibraryError(f"{spec} is not in the Specula models folder ({self.models_dir})") from None
        removed: list[Path] = []
        for name in part_names(first.name):
            final = first.with_name(name)
            for p in (final, part_file(final), sidecar_file(final)):
                if p.is_file() or p.is_symlink():
                    p.unlink()
                    removed.append(p)
        if not removed:
            raise LibraryError(f"no model {spec} in the library")
        self._prune_empty(first.parent)
        self.scan()  # drops the removed files from the index
        return removed

    def _prune_empty(self, folder: Path) -> None:
        root = self.models_dir.resolve()
        current = folder.resolve()
        while current != root and root in current.parents:
            try:
                current.rmdir()
            except OSError:
                return
            current = current.parent

    def incomplete(self) -> list[dict[str, object]]:
        """Resumable downloads in the models folder, for a "resume" list."""
        return [{"path": str(final), "repo_id": side.repo_id, "filename": side.filename,
                 "size": side.size, "downloaded": have}
                for final, side, have in incomplete_downloads(self.models_dir)]
