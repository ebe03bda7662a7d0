"""The local library: scan, index reuse, changed and vanished files, extra folders, remove."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specula.core.hub.partial_files import Sidecar, part_file, sidecar_file
from specula.core.library.index import default_index_path
from specula.core.library.scan import Library, LibraryError, resolve_models_dir


def _put(models: Path, rel: str, src: Path) -> Path:
    dest = models / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


@pytest.fixture
def models(tmp_path: Path, tiny: dict[str, Path]) -> Path:
    folder = tmp_path / "models"
    _put(folder, "acme/Tiny-GGUF/tiny-target-f32.gguf", tiny["target"])
    _put(folder, "acme/Tiny-GGUF/tiny-draft-f32.gguf", tiny["draft"])
    data = tiny["other"].read_bytes()
    for i, chunk in enumerate((data[: len(data) // 2], data[len(data) // 2:]), 1):
        p = folder / f"acme/Split-GGUF/other-{i:05d}-of-00002.gguf"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(chunk)
    (folder / "acme/Tiny-GGUF/README.md").write_text("not a model")
    return folder


def test_models_folder_setting_and_env_override(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_models_dir(None).name == "models"
    assert resolve_models_dir(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.setenv("SPECULA_MODELS_DIR", str(tmp_path / "env"))
    assert resolve_models_dir(tmp_path / "mine") == tmp_path / "env"


def test_scan_lists_models_once_and_reuses_the_index(models: Path) -> None:
    lib = Library(models)
    first = lib.scan()
    names = [m.name for m in first.models]
    assert names == ["other-00001-of-00002.gguf", "tiny-draft-f32.gguf", "tiny-target-f32.gguf"]
    split = first.models[0]
    assert len(split.parts) == 2 and split.complete and split.repo_id == "acme/Split-GGUF"
    assert split.size == sum(p.stat().st_size for p in split.parts)
    target = first.models[2]
    assert target.info is not None and target.info.name == "tiny-target" and target.managed
    assert first.read == 3 and first.reused == 0
    assert default_index_path().exists()

    again = Library(models).scan()  # a fresh object: the index on disk is what is reused
    assert again.read == 0 and again.reused == 3
    assert again.models[2].info is not None
    assert again.models[2].info.tokenizer_fingerprint == target.info.tokenizer_fingerprint


def test_changed_and_vanished_files_are_noticed(models: Path, tiny: dict[str, Path]) -> None:
    Library(models).scan()
    target = models / "acme/Tiny-GGUF/tiny-target-f32.gguf"
    shutil.copyfile(tiny["exact_draft"], target)
    os.utime(target, ns=(1, 1))
    (models / "acme/Tiny-GGUF/tiny-draft-f32.gguf").unlink()
    result = Library(models).scan()
    assert result.read == 1 and result.reused == 1
    assert [Path(p).name for p in result.changed] == ["tiny-target-f32.gguf"]
    assert [Path(p).name for p in result.vanished] == ["tiny-draft-f32.gguf"]
    by_name = {m.name: m for m in result.models}
    info = by_name["tiny-target-f32.gguf"].info
    assert info is not None and info.name == "tiny-exact-draft"


def test_a_broken_file_is_listed_with_its_error(models: Path) -> None:
    (models / "acme/Tiny-GGUF/broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 30)
    model = {m.name: m for m in Library(models).scan().models}["broken.gguf"]
    assert model.info is None and model.error


def test_extra_folders_and_hf_cache_symlinks(tmp_path: Path, models: Path,
                                             tiny: dict[str, Path]) -> None:
    hf = tmp_path / "hf-hub"
    blob = _put(hf, "models--Org--Cached-GGUF/blobs/abc123", tiny["target"])
    for rev in ("rev1", "rev2"):  # two snapshots pointing at one blob: listed once
        snap = hf / f"models--Org--Cached-GGUF/snapshots/{rev}/cached-q4_0.gguf"
        snap.parent.mkdir(parents=True)
        snap.symlink_to(blob)
    lms = tmp_path / "lmstudio"
    _put(lms, "someone/Thing-GGUF/thing-q8_0.gguf", tiny["draft"])
    lib = Library(models, extra_dirs=[hf, lms])
    found = {m.name: m for m in lib.scan().models}
    assert found["cached-q4_0.gguf"].repo_id == "Org/Cached-GGUF"
    assert not found["cached-q4_0.gguf"].managed
    assert found["thing-q8_0.gguf"].repo_id == "someone/Thing-GGUF"
    assert sum(1 for m in lib.scan().models if m.name == "cached-q4_0.gguf") == 1
    with pytest.raises(LibraryError, match="only indexes it"):
        lib.remove(found["cached-q4_0.gguf"].path)
    assert blob.exists()


def test_remove_deletes_parts_and_incomplete_files(models: Path) -> None:
    lib = Library(models)
    lib.scan()
    split_first = models / "acme/Split-GGUF/other-00001-of-00002.gguf"
    part_file(split_first.with_name("other-00002-of-00002.gguf")).write_bytes(b"half")
    removed = lib.remove("acme/Split-GGUF/other-00001-of-00002.gguf")
    assert len(removed) == 3
    assert not (models / "acme/Split-GGUF").exists()
    names = [m.name for m in lib.scan().models]
    assert names == ["tiny-draft-f32.gguf", "tiny-target-f32.gguf"]
    with pytest.raises(LibraryError, match="no model"):
        lib.remove("acme/Split-GGUF/other-00001-of-00002.gguf")
    with pytest.raises(LibraryError, match="not in the Specula models folder"):
        lib.remove("../../etc/passwd")


def test_incomplete_downloads_are_listed_and_removable(models: Path) -> None:
    final = models / "acme/Pending-GGUF/pending-q4_0.gguf"
    final.parent.mkdir(parents=True)
    part_file(final).write_bytes(b"x" * 10)
    Sidecar("acme/Pending-GGUF", final.name, 100, "a" * 64).save(sidecar_file(final))
    lib = Library(models)
    assert [m.name for m in lib.scan().models if "pending" in m.name] == []
    [pending] = lib.incomplete()
    assert pending["downloaded"] == 10 and pending["size"] == 100
    assert len(lib.remove("acme/Pending-GGUF/pending-q4_0.gguf")) == 2
    assert lib.incomplete() == []


def test_a_damaged_index_is_rebuilt(models: Path) -> None:
    default_index_path().write_text("{not json")
    assert Library(models).scan().read == 3
    default_index_path().write_text('{"version": 1, "files": {"x": {"size": "big"}}}')
    assert Library(models).scan().read == 3


def test_fifty_models_list_from_the_index(tmp_path: Path, tiny: dict[str, Path]) -> None:
    models = tmp_path / "many"
    for i in range(50):
        dest = models / f"org/Repo{i:02d}-GGUF/model-{i:02d}-q4_0.gguf"
        dest.parent.mkdir(parents=True)
        os.link(tiny["draft"], dest)  # distinct paths, no 50 copies on disk
    first = Library(models).scan()
    assert first.read == 50 and len(first.models) == 50
    second = Library(models).scan()
    assert second.read == 0 and second.reused == 50
    assert all(m.info is not None and m.info.name == "tiny-draft" for m in second.models)
