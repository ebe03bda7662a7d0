"""How an unfinished download sits on disk, so any later run can trust and continue it.

``NAME.gguf.part`` holds the bytes received so far; ``NAME.gguf.part.json``
(the sidecar) says which repo and file they belong to, the full size and the
expected sha256. A part without a matching sidecar is never resumed: its bytes
could belong to another upload of the file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from specula.core import files, json_files, paths
from specula.core.hub.client import validate_filename, validate_repo_id
from specula.core.hub.errors import ErrorKind, HubError

PART_SUFFIX = ".part"
SIDECAR_SUFFIX = ".part.json"


@dataclass
class Sidecar:
    """What an incomplete ``.part`` file is, so a later run can trust and continue it."""

    repo_id: str
    filename: str
    size: int
    sha256: str | None
    version: int = 1

    @staticmethod
    def load(path: Path) -> Sidecar | None:
        # A sidecar that cannot be read is never resumed from (and never set aside: the
        # download writes a new one), so read() and not load().
        try:
            data = json_files.read(json_files.JsonFile(
                path, "download record", {"repo_id": str, "filename": str, "size": int},
                max_bytes=64 * 1024))
            return Sidecar(str(data["repo_id"]), str(data["filename"]), int(data["size"]),
                           data["sha256"] if isinstance(data.get("sha256"), str) else None)
        except (OSError, ValueError, KeyError):
            return None

    def save(self, path: Path) -> None:
        files.atomic_write_json(path, asdict(self))


def local_path(models_dir: Path, repo_id: str, filename: str) -> Path:
    """``<models>/<owner>/<repo>/<file>``; names are validated so nothing escapes ``models_dir``."""
    validate_repo_id(repo_id)
    validate_filename(filename)
    path = (models_dir / repo_id / filename).resolve()
    if not path.is_relative_to(models_dir.resolve()):
        raise HubError(ErrorKind.INVALID, f"unsafe file name in repository: {filename!r}")
    return path


def part_file(final: Path) -> Path:
    return final.with_name(final.name + PART_SUFFIX)


def sidecar_file(final: Path) -> Path:
    return final.with_name(final.name + SIDECAR_SUFFIX)


def incomplete_downloads(models_dir: Path | None = None) -> list[tuple[Path, Sidecar, int]]:
    """Every resumable download in the models folder: (final path, sidecar, bytes on disk)."""
    root = models_dir or paths.default_models_dir()
    found = []
    for side in sorted(root.rglob("*" + SIDECAR_SUFFIX)):
        sidecar = Sidecar.load(side)
        if sidecar is None:
            continue
        final = side.with_name(side.name[: -len(SIDECAR_SUFFIX)])
        part = part_file(final)
        found.append((final, sidecar, part.stat().st_size if part.exists() else 0))
    return found
