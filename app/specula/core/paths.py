"""Where Specula keeps its files.

By default under the platform's user directories (platformdirs). The
environment variable ``SPECULA_HOME`` relocates everything (settings,
conversations, caches, the default models folder) under one folder, which the
tests and portable installs use. ``SPECULA_MODELS_DIR`` overrides only the
models folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import PlatformDirs

APP_NAME = "Specula"
_dirs = PlatformDirs(APP_NAME, appauthor=False)


def home() -> Path | None:
    """The ``SPECULA_HOME`` folder, when set."""
    value = os.environ.get("SPECULA_HOME")
    return Path(value).expanduser() if value else None


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """Settings (settings.json)."""
    h = home()
    return _ensure(h / "config" if h else Path(_dirs.user_config_dir))


def data_dir() -> Path:
    """Conversations, per-pair statistics, the library index."""
    h = home()
    return _ensure(h / "data" if h else Path(_dirs.user_data_dir))


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
