"""Downloads over real HTTP against the fake hub: progress, resume, pause, cancel, checksum."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from specula.core.hub.client import HubClient
from specula.core.hub.download import Download, DownloadProgress, DownloadState
from specula.core.hub.errors import ErrorKind, HubError
from specula.core.hub.partial_files import (
    Sidecar,
    incomplete_downloads,
    local_path,
    part_file,
    sidecar_file,
)
from tests.fixtures.fake_hub import FakeFile, FakeHub
from tests.fixtures.hub_repos import SMALL_REPO, SPLIT_FIRST, TARGET_FILE, TARGET_REPO


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_with_progress_and_checksum(fake_hub: FakeHub, tmp_path: Path) -> None:
    seen: list[DownloadProgress] = []
    dl = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, on_progress=seen.append,
                  chunk_size=16 * 1024, progress_interval=0)
    result = dl.run()
    final = tmp_path / TARGET_REPO / TARGET_FILE
    assert result.state is DownloadState.DONE and result.paths == [final]
    expected = fake_hub.repos[TARGET_REPO].files[TARGET_FILE]
    assert final.read_bytes() == expected.data and _sha(final) == expected.sha256
    assert not part_file(final).exists() and not sidecar_file(final).exists()
    sizes = [p.downloaded for p in seen]
    assert sizes == sorted(sizes) and seen[-1].downloaded == seen[-1].total == len(expected.data)
    assert seen[-1].state is DownloadState.DONE
    assert any(p.state is DownloadState.VERIFYING for p in seen)
    assert any(p.speed > 0 for p in seen)
    # The body came from the CDN host, without the auth header leaving the hub.
    assert fake_hub.requests_to(f"/cdn/{TARGET_REPO}/{TARGET_FILE}")


def test_split_model_downloads_every_part(fake_hub: FakeHub, tmp_path: Path) -> None:
    result = Download(TARGET_REPO, SPLIT_FIRST, models_dir=tmp_path).run()
    assert [p.name for p in result.paths] == [
        f"tiny-coder-7b-instruct-f16-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
    joined = b"".join(p.read_bytes() for p in result.paths)
    assert joined == fake_hub.repos[TARGET_REPO].files[TARGET_FILE].data


def test_resume_after_the_connection_drops(fake_hub: FakeHub, tmp_path: Path) -> None:
    size = len(fake_hub.repos[TARGET_REPO].files[TARGET_FILE].data)
    cut = 100_000
    fake_hub.drop_after[TARGET_FILE] = cut
    result = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, chunk_size=8192,
                      retry_wait=0).run()
    assert result.state is DownloadState.DONE
    gets = fake_hub.requests_to(f"/cdn/{TARGET_REPO}/{TARGET_FILE}")
    assert len(gets) == 2
    assert "range" not in gets[0].headers
    assert gets[1].headers["range"] == f"bytes={cut}-"  # nothing fetched twice
    assert (tmp_path / TARGET_REPO / TARGET_FILE).stat().st_size == size


def test_broken_connection_without_retries_keeps_a_resumable_part(fake_hub: FakeHub,
                                                                  tmp_path: Path) -> None:
    fake_hub.drop_after[TARGET_FILE] = 50_000
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, chunk_size=8192,
                 max_retries=0).run()
    assert err.value.kind is ErrorKind.NETWORK and "resume" in err.value.message
    final = tmp_path / TARGET_REPO / TARGET_FILE
    assert not final.exists() and part_file(final).stat().st_size == 50_000
    [(pending, sidecar, have)] = incomplete_downloads(tmp_path)
    assert pending == final and sidecar.repo_id == TARGET_REPO and have == 50_000
    # A new run (after a restart) continues from byte 50 000.
    result = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path).run()
    assert result.resumed_from == 50_000 and final.exists()
    assert fake_hub.requests_to("/cdn/")[-1].headers["range"] == "bytes=50000-"


def test_pause_then_resume_with_a_new_downloader(fake_hub: FakeHub, tmp_path: Path) -> None:
    holder: list[Download] = []

    def pause_at_half(p: DownloadProgress) -> None:
        if p.downloaded >= p.total // 2:
            holder[0].pause()

    dl = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, on_progress=pause_at_half,
                  chunk_size=16 * 1024, progress_interval=0)
    holder.append(dl)
    assert dl.run().state is DownloadState.PAUSED
    final = tmp_path / TARGET_REPO / TARGET_FILE
    kept = part_file(final).stat().st_size
    assert 0 < kept < len(fake_hub.repos[TARGET_REPO].files[TARGET_FILE].data)
    assert not final.exists() and Sidecar.load(sidecar_file(final)) is not None

    again = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path)  # "after a restart"
    result = again.run()
    assert result.state is DownloadState.DONE and result.resumed_from == kept
    assert fake_hub.requests_to("/cdn/")[-1].headers["range"] == f"bytes={kept}-"
    assert _sha(final) == fake_hub.repos[TARGET_REPO].files[TARGET_FILE].sha256


def test_cancel_deletes_the_incomplete_file(fake_hub: FakeHub, tmp_path: Path) -> None:
    holder: list[Download] = []
    dl = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, chunk_size=8192,
                  progress_interval=0,
                  on_progress=lambda p: holder[0].cancel() if p.downloaded > 20_000 else None)
    holder.append(dl)
    result = dl.run()
    assert result.state is DownloadState.CANCELLED and dl.state is DownloadState.CANCELLED
    folder = tmp_path / TARGET_REPO
    assert list(folder.iterdir()) == []


def test_checksum_mismatch_deletes_the_file(fake_hub: FakeHub, tmp_path: Path) -> None:
    f = fake_hub.repos[SMALL_REPO].files["tiny-coder-0.5b-instruct-q4_k_m.gguf"]
    f.claimed_sha256 = "0" * 64
    with pytest.raises(HubError) as err:
        Download(SMALL_REPO, "tiny-coder-0.5b-instruct-q4_k_m.gguf", models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.CHECKSUM
    assert "checksum mismatch" in err.value.message and "deleted" in err.value.message
    assert list((tmp_path / SMALL_REPO).iterdir()) == []


def test_a_part_of_another_version_is_not_trusted(fake_hub: FakeHub, tmp_path: Path) -> None:
    final = local_path(tmp_path, SMALL_REPO, "tiny-coder-0.5b-instruct-q4_k_m.gguf")
    final.parent.mkdir(parents=True)
    part_file(final).write_bytes(b"garbage from an older upload")
    Sidecar(SMALL_REPO, final.name, 999, "f" * 64).save(sidecar_file(final))
    result = Download(SMALL_REPO, final.name, models_dir=tmp_path).run()
    assert result.resumed_from == 0
    assert "range" not in fake_hub.requests_to("/cdn/")[-1].headers
    assert _sha(final) == fake_hub.repos[SMALL_REPO].files[final.name].sha256


def test_not_enough_disk_space_is_refused_before_starting(
        fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(10**9, 10**9 - 4096, 4096))
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.DISK_FULL and "not enough disk space" in err.value.message
    assert not fake_hub.requests_to("/cdn/")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_disk_full_mid_download_keeps_the_part(fake_hub: FakeHub, tmp_path: Path) -> None:
    name = "tiny-coder-0.5b-instruct-q4_k_m.gguf"
    info = fake_hub.repos[SMALL_REPO].files[name]
    final = local_path(tmp_path, SMALL_REPO, name)
    final.parent.mkdir(parents=True)
    # Writing to /dev/full fails with a real ENOSPC.
    part_file(final).symlink_to("/dev/full")
    Sidecar(SMALL_REPO, name, len(info.data), info.sha256).save(sidecar_file(final))
    with pytest.raises(HubError) as err:
        Download(SMALL_REPO, name, models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.DISK_FULL and "disk is full" in err.value.message
    assert part_file(final).is_symlink() and sidecar_file(final).exists()
    assert not final.exists()


@pytest.mark.parametrize(("status", "kind"), [
    (404, ErrorKind.NOT_FOUND), (401, ErrorKind.UNAUTHORIZED), (500, ErrorKind.SERVER)])
def test_download_http_errors(fake_hub: FakeHub, tmp_path: Path, status: int,
                              kind: ErrorKind) -> None:
    fake_hub.status_for[f"/cdn/{TARGET_REPO}"] = status
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path).run()
    assert err.value.kind is kind
    assert not (tmp_path / TARGET_REPO / TARGET_FILE).exists()


def test_missing_file_and_hostile_paths_info(fake_hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, "nope-q4_0.gguf", models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.NOT_FOUND
    fake_hub.hostile[f"/api/models/{TARGET_REPO}/paths-info"] = b'[{"type": "file"}]'
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.BAD_REPLY
    with pytest.raises(HubError) as err:
        Download(TARGET_REPO, "../../escape.gguf", models_dir=tmp_path)
    assert err.value.kind is ErrorKind.INVALID


def test_a_server_sending_too_many_bytes_never_yields_a_complete_file(
        fake_hub: FakeHub, tmp_path: Path) -> None:
    name = "tiny-coder-0.5b-instruct-q4_k_m.gguf"
    real = fake_hub.repos[SMALL_REPO].files[name]
    # The API says the file is shorter than what the CDN serves.
    fake_hub.repos[SMALL_REPO].files[name] = FakeFile(real.data)
    fake_hub.hostile[f"/api/models/{SMALL_REPO}/paths-info"] = (
        b'[{"type": "file", "oid": "x", "size": 134, "path": "%s",'
        b' "lfs": {"oid": "%s", "size": 1000, "pointerSize": 134}}]'
        % (name.encode(), real.sha256.encode()))
    with pytest.raises(HubError) as err:
        Download(SMALL_REPO, name, models_dir=tmp_path, hub=HubClient()).run()
    assert err.value.kind is ErrorKind.BAD_REPLY
    assert not (tmp_path / SMALL_REPO / name).exists()


def test_resume_when_the_server_ignores_ranges(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.drop_after[TARGET_FILE] = 60_000
    with pytest.raises(HubError):
        Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, max_retries=0).run()
    fake_hub.ignore_range = True  # answers 200 with the whole file to a Range request
    seen: list[DownloadProgress] = []
    result = Download(TARGET_REPO, TARGET_FILE, models_dir=tmp_path, on_progress=seen.append,
                      progress_interval=0).run()
    final = tmp_path / TARGET_REPO / TARGET_FILE
    assert result.state is DownloadState.DONE
    assert _sha(final) == fake_hub.repos[TARGET_REPO].files[TARGET_FILE].sha256
    assert seen[-1].downloaded == seen[-1].total
