"""Where Specula keeps its files.

By default under the platform's user directories (platformdirs). The
environment variable ``SPECULA_HOME`` relocates everything (settings,
conversations, caches, the default models folder) under one folder, which the
tests and portable installs use. ``SPECULA_MODELS_DIR`` overrides only the
models folder.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from platformdirs import PlatformDirs

APP_NAME = "Specula"
_dirs = PlatformDirs(APP_NAME, appauthor=False)


def home() -> Path | None:
    """The ``SPECULA_HOME`` folder, when set."""
    value = os.environ.get("SPECULA_HOME")
    return Path(value).expanduser() if value else None


class PathError(OSError):
    """A folder Specula needs cannot be made or used; the message says which and why
    (the CLI prints it as one ``specula: error:`` line)."""


def _ensure(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        h = home()
        where = "SPECULA_HOME" if h is not None and path.is_relative_to(h) else "the folder"
        reason = exc.strerror or str(exc)
        hint = (f" (SPECULA_HOME is {h}); set it to a writable folder" if where == "SPECULA_HOME"
                else "")
        raise PathError(f"cannot use {path} for Specula's files: {reason}{hint}") from None
    return path


# A file a killed write left behind: "<name>.tmp-<pid>-<thread>" (the n-gram store), or
# tempfile's "tmpXXXXXXXX.tmp" (settings, records) older than an hour.
_PID_TEMP = re.compile(r"\.tmp-(\d+)-\d+$")
_STALE_TEMP_S = 3600.0
_swept: set[Path] = set()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True


def sweep_temp_files(folder: Path) -> list[Path]:
    """Delete the temporary files a killed write left under ``folder`` (its writer's
    process is gone, or it is an hour old); what was removed. Once per folder and process."""
    if folder in _swept:
        return []
    _swept.add(folder)
    removed: list[Path] = []
    now = time.time()
    try:
        candidates = [p for p in folder.rglob("*.tmp*") if p.is_file()]
    except OSError:
        return removed
    for p in candidates:
        m = _PID_TEMP.search(p.name)
        try:
            stale = (not _pid_alive(int(m.group(1))) or int(m.group(1)) == os.getpid()) if m \
                else (p.name.startswith("tmp") and p.name.endswith(".tmp")
                      and now - p.stat().st_mtime > _STALE_TEMP_S)
            if stale:
                p.unlink()
                removed.append(p)
        except OSError:
            continue
    return removed


def config_dir() -> Path:
    """Settings (settings.json)."""
    h = home()
    return _ensure(h / "config" if h else Path(_dirs.user_config_dir))


def data_dir() -> Path:
    """Conversations, per-pair statistics, the library index."""
    h = home()
    folder = _ensure(h / "data" if h else Path(_dirs.user_data_dir))
    sweep_temp_files(folder)  # at the first use in a process: what a killed write left
    return folder


def cache_dir() -> Path:
    """Things that can be rebuilt (remote header cache)."""
    h = home()
    return _ensure(h / "cache" if h else Path(_dirs.user_cache_dir))


def default_models_dir() -> Path:
    """The models folder unless settings or ``SPECULA_MODELS_DIR`` say otherwise."""
    env = os.environ.get("SPECULA_MODELS_DIR")
    if env:
        return _ensure(Path(env).expanduser())
    h = home()
    return _ensure(h / "models" if h else Path(_dirs.user_data_dir) / "models")
