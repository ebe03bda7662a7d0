"""A .gguf the hub lists without a sha256 is verified for what can be verified.

Before: accepted on size alone, so a corrupted body of the right size was saved
as complete. Now its header must parse and the tensor data it announces must
end where the file ends; the result says that no checksum was available.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from specula.core.gguf.reader import BytesSource, read_header
from specula.core.gguf.structure import check_structure
from specula.core.hub.download import Download, DownloadState
from specula.core.hub.errors import ErrorKind, HubError
from specula.core.hub.partial_files import part_file, sidecar_file
from tests.fixtures.fake_hub import FakeFile, FakeHub

REPO = "plain/No-LFS-GGUF"
NAME = "model-f32.gguf"


def _serve(hub: FakeHub, data: bytes) -> None:
    hub.add_repo(REPO, {NAME: FakeFile(data, lfs=False)})  # listed with a size, no sha256


def test_a_good_file_is_saved_and_says_no_checksum(fake_hub: FakeHub, tmp_path: Path,
                                                   hub_models: dict[str, Path]) -> None:
    _serve(fake_hub, hub_models["small"].read_bytes())
    result = Download(REPO, NAME, models_dir=tmp_path).run()
    assert result.state is DownloadState.DONE
    assert result.verified == {NAME: "no checksum available, verified structure "
                                     "(header and tensor data size)"}
    assert result.without_checksum == [NAME]
    assert (tmp_path / REPO / NAME).read_bytes() == hub_models["small"].read_bytes()


def _corrupt_header(data: bytes) -> bytes:
    return random.Random(1).randbytes(4096) + data[4096:]


def _header_of_a_bigger_model(data: bytes) -> bytes:
    """The real header with the last 8 KB of tensor data missing (the hub lists the shorter
    size, so the size check alone passes; the header announces more than there is)."""
    return data[: len(data) - 8192]


def _trailing_garbage(data: bytes) -> bytes:
    return data + b"\0" * 4096


@pytest.mark.parametrize("damage", [_corrupt_header, _header_of_a_bigger_model, _trailing_garbage],
                         ids=["corrupt header", "short tensor data", "trailing bytes"])
def test_a_damaged_file_is_not_saved_as_complete(damage, fake_hub: FakeHub, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                 hub_models: dict[str, Path]) -> None:
    _serve(fake_hub, damage(hub_models["small"].read_bytes()))
    final = tmp_path / REPO / NAME
    with pytest.raises(HubError) as err:
        Download(REPO, NAME, models_dir=tmp_path).run()
    assert err.value.kind is ErrorKind.CHECKSUM
    assert "not a valid GGUF file" in err.value.message and "no checksum" in err.value.message
    assert not final.exists() and not part_file(final).exists() and not sidecar_file(final).exists()


def test_the_structure_check_against_the_writer(hub_models: dict[str, Path], tmp_path: Path) -> None:
    """Every tiny model GGUFWriter wrote passes; its tensor data size is what numpy says."""
    for path in hub_models.values():
        check = check_structure(path)
        header = read_header(BytesSource(path.read_bytes()))
        # F32 tensors: 4 bytes per element, counted independently of the checker.
        raw = sum(4 * t.n_elements for t in header.tensors)
        assert check.sizes_checked and raw <= check.data_bytes <= raw + 32 * len(header.tensors)
