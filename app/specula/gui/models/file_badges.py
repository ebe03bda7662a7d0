"""Discover's work on a repository's files, without Qt: read each file's header from the hub
and badge it (fit on this machine, pairing with the loaded models); say whether the
selected file can be downloaded and why not.

The page runs :func:`badge_files` in the background (``check`` and ``emit`` come from
its task) and paints what it sends; headers already read this session are not read again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specula.core.gguf.model_info import ModelInfo
from specula.core.hub.client import HubClient, RemoteModel
from specula.core.hub.remote_header import read_remote_info
from specula.core.pairing.badges import FileBadges, badges_for, detected_gpu_free
from specula.core.sizes import byte_size
from specula.gui.models.repo_files_view import FileRow

HeaderKey = tuple[str, str]  # (repo id, file name)
Badged = tuple[HeaderKey, ModelInfo | None, FileBadges | None, str | None]
"""One file's result: its key, its header, its badges, or why its header could not be read."""


def badge_files(repo_id: str, models: list[RemoteModel], cache: dict[HeaderKey, ModelInfo],
                errors: dict[HeaderKey, str], *, target: ModelInfo | None,
                draft: ModelInfo | None, n_ctx: int, gpu_known: list[int] | None,
                check: Callable[[], None], emit: Callable[[Badged], None]) -> list[int]:
    """Badge every file of ``repo_id`` (``emit`` each as it is known); returns the free GPU
    memory the fit badges assumed (detected once, then reused)."""
    gpu = gpu_known if gpu_known is not None else detected_gpu_free()
    hub = HubClient()
    for model in models:
        check()
        key = (repo_id, model.filename)
        info, error = cache.get(key), errors.get(key)
        if info is None and error is None:
            try:
                info = read_remote_info(repo_id, model.filename, hub)
            except Exception as exc:
                error = str(exc)
        if info is None:
            emit((key, None, None, error or "unreadable"))
            continue
        badges = badges_for(info, model.total_size, model.filename, target=target,
                            draft=draft, n_ctx=n_ctx, gpu_free=gpu)
        emit((key, info, badges, None))
    return gpu


def download_state(row: FileRow | None, running: bool, models_dir: Path) -> tuple[bool, str]:
    """Whether the selected file can be downloaded, and the line beside the button."""
    if row is None:
        return False, ""
    ok = row.model.complete and not row.local and not running
    if row.local:
        return ok, "Already in the library (My Models)."
    if running:
        return ok, "Downloading: see Downloads."
    if not row.model.complete:
        return ok, "Some parts of this split model are missing on the hub."
    return ok, f"{byte_size(row.model.total_size)} into {models_dir}"
