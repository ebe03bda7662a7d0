"""Fixtures for the model pages: a bare AppContext (the fake hub comes from tests/fixtures/hub_repos.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.gui.context import AppContext


@pytest.fixture
def ctx(qtbot) -> Iterator[AppContext]:  # type: ignore[no-untyped-def]
    """An app context (engine thread, library, downloads) closed at the end."""
    context = AppContext()
    qtbot.waitUntil(lambda: not context.library.scanning, timeout=10000)
    yield context
    context.close()


def put_model(folder: Path, repo_id: str, src: Path, name: str) -> Path:
    """Copy a tiny GGUF into ``folder/owner/repo/name`` (as a download would leave it)."""
    dest = folder / repo_id / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest
