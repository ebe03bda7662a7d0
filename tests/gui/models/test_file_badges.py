"""Whether Discover's selected file can be downloaded, and the line that says why (no Qt)."""

from __future__ import annotations

from pathlib import Path

from specula.core.hub.client import RemoteFile, RemoteModel
from specula.gui.models.file_badges import download_state
from specula.gui.models.repo_files_view import FileRow

MODELS = Path("/home/u/models")


def row(*, local: bool = False, complete: bool = True) -> FileRow:
    model = RemoteModel("org/repo", [RemoteFile("m-Q4_K_M.gguf", 491_000_000, None)], "Q4_K_M",
                        complete=complete)
    return FileRow(model, local=local)


def test_a_new_complete_file_downloads_and_says_its_size_and_where() -> None:
    assert download_state(row(), False, MODELS) == (True, "491 MB into /home/u/models")


def test_why_a_file_cannot_be_downloaded() -> None:
    assert download_state(None, False, MODELS) == (False, "")
    assert download_state(row(local=True), False, MODELS) == \
        (False, "Already in the library (My Models).")
    assert download_state(row(), True, MODELS) == (False, "Downloading: see Downloads.")
    assert download_state(row(complete=False), False, MODELS) == \
        (False, "Some parts of this split model are missing on the hub.")
