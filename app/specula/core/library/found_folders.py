"""Folders other apps keep GGUF files in, found on this machine, for a first run.

Why: a new user who already has models (LM Studio's, or files fetched with
``huggingface_hub``) found an empty My Models and no word of where to add
them. The welcome screen and the empty My Models offer the folders found here
with one click each. Looked for:

* LM Studio's models folder: ``~/.lmstudio/models`` (current versions) and
  ``~/.cache/lm-studio/models`` (older ones), GGUF files under
  ``<publisher>/<repo>/``;
* the Hugging Face cache, located by huggingface_hub's own rule
  (``HF_HUB_CACHE``, else ``HF_HOME/hub``, ``HF_HOME`` defaulting to
  ``$XDG_CACHE_HOME/huggingface`` or ``~/.cache/huggingface``), GGUF files
  under ``models--*/snapshots/*/`` (links to the blobs; a link whose blob is
  missing is not counted).

Only folders holding at least one GGUF file, and not already in the library,
are offered. Walking folders reads the disk: run it off the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

LM_STUDIO = "LM Studio"
HF_CACHE = "Hugging Face cache"
MAX_COUNTED = 1000  # a count stops here ("1000+"): the offer needs no exact census


@dataclass(frozen=True)
class FoundFolder:
    path: Path
    source: str  # LM_STUDIO or HF_CACHE
    gguf_files: int  # up to MAX_COUNTED

    @property
    def count_text(self) -> str:
        n = self.gguf_files
        if n >= MAX_COUNTED:
            return f"{MAX_COUNTED}+ GGUF files"
        return f"{n} GGUF file{'' if n == 1 else 's'}"


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def hf_hub_cache(env: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, by huggingface_hub's rule (read now, not at import)."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else \
        _home(env) / ".cache"
    return cache / "huggingface" / "hub"


def lm_studio_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    home = _home(os.environ if env is None else env)
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def _gguf_in_lm_studio(folder: Path) -> Iterator[Path]:
    return (p for p in folder.rglob("*") if p.suffix.lower() == ".gguf")


def _gguf_in_hf_cache(folder: Path) -> Iterator[Path]:
    for repo in folder.glob("models--*"):
        for p in (repo / "snapshots").glob("*/**/*"):
            if p.suffix.lower() == ".gguf":
                yield p


def _count(files: Iterable[Path]) -> int:
    n = 0
    try:
        for p in files:
            if p.is_file():  # follows the link: a dangling one is not a model
                n += 1
                if n >= MAX_COUNTED:
                    break
    except OSError:
        pass  # an unreadable subfolder: what was counted stands
    return n


def _same(a: str | os.PathLike[str], b: Path) -> bool:
    try:
        return Path(a).expanduser().resolve() == b.resolve()
    except OSError:
        return False


def found_model_folders(known: Iterable[str | os.PathLike[str]] = (),
                        env: Mapping[str, str] | None = None) -> list[FoundFolder]:
    """LM Studio's models folders and the Hugging Face cache that exist here and hold GGUF
    files, minus the ``known`` folders (the library's own), in that order."""
    env = os.environ if env is None else env
    known = list(known)
    candidates = [(p, LM_STUDIO, _gguf_in_lm_studio) for p in lm_studio_dirs(env)]
    candidates.append((hf_hub_cache(env), HF_CACHE, _gguf_in_hf_cache))
    out: list[FoundFolder] = []
    for path, source, files in candidates:
        if not path.is_dir() or any(_same(k, path) for k in known) or \
                any(_same(f.path, path) for f in out):
            continue
        n = _count(files(path))
        if n:
            out.append(FoundFolder(path, source, n))
    return out
