"""`specula serve` and `specula chat` end a bad start with one ``specula: error:`` line
(never a traceback or an abort): SPECULA_HOME that is a file or cannot be written, a
model path that is not UTF-8, a GGUF whose vocabulary repeats a token text (llama.cpp
would abort on GGML_ASSERT); and a temporary file a killed write left is removed at the
next start."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specula.core import paths
from specula.core.gguf.reader import FileSource, GGUFError, read_header
from specula_tools import tiny_models

APP = str(Path(__file__).parents[2] / "app")


def _cli(args: list[str], home: Path | str, extra_env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": APP, "SPECULA_HOME": str(home), **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "specula.cli", *args], env=env,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def _one_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode not in (0, -6, -11), (proc.returncode, err)  # no abort, no crash
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("specula: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def duplicate_vocab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny target with its last token's text written a second time."""
    real = tiny_models._bpe_vocab

    def twice(words: list[str]) -> tuple[list[str], list[str]]:
        tokens, merges = real(words)
        return [*tokens[:-1], tokens[-2]], merges

    tiny_models._bpe_vocab = twice  # type: ignore[assignment]
    try:
        return tiny_models.build_tiny_model(tmp_path_factory.mktemp("dup") / "dup.gguf")
    finally:
        tiny_models._bpe_vocab = real  # type: ignore[assignment]


def test_a_vocabulary_with_a_repeated_text_is_refused_by_the_header_reader(
        duplicate_vocab: Path) -> None:
    with pytest.raises(GGUFError, match="twice"):
        read_header(FileSource(duplicate_vocab))


@pytest.mark.parametrize("command", ["serve", "chat"])
def test_the_cli_refuses_it_in_one_line(duplicate_vocab: Path, tmp_path: Path,
                                        command: str) -> None:
    args = [command, "--model", str(duplicate_vocab)] + (["--port", "0"] if command == "serve"
                                                         else [])
    line = _one_error_line(_cli(args, tmp_path / "home"))
    assert "twice" in line


def test_specula_home_that_is_a_file_is_one_line(tiny: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    line = _one_error_line(_cli(["serve", "--model", str(tiny["target"]), "--port", "0"], home))
    assert "SPECULA_HOME" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_specula_home_that_cannot_be_written_is_one_line(tiny: dict[str, Path],
                                                         tmp_path: Path) -> None:
    home = tmp_path / "ro"
    home.mkdir()
    home.chmod(0o500)
    try:
        line = _one_error_line(_cli(["serve", "--model", str(tiny["target"]), "--port", "0"],
                                    home))
    finally:
        home.chmod(0o700)
    assert "SPECULA_HOME" in line


def test_a_full_filesystem_is_one_line(tiny: dict[str, Path]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    # /dev/full is not a folder: mkdir under it fails the way a full or odd disk does
    line = _one_error_line(_cli(["serve", "--model", str(tiny["target"]), "--port", "0"],
                                "/dev/full/home"))
    assert "SPECULA_HOME" in line


@pytest.mark.skipif(sys.platform != "linux", reason="names are bytes on Linux")
@pytest.mark.parametrize("command", ["serve", "chat"])
def test_a_model_path_that_is_not_utf8_is_one_line(tiny: dict[str, Path], tmp_path: Path,
                                                   command: str) -> None:
    odd = os.path.join(os.fsencode(tmp_path), b"mod\xe9l.gguf")
    shutil.copyfile(os.fsencode(tiny["target"]), odd)
    args = [command, "--model", os.fsdecode(odd)] + (["--port", "0"] if command == "serve"
                                                     else [])
    line = _one_error_line(_cli(args, tmp_path / "home"))
    assert "UTF-8" in line


def test_a_killed_writes_temporary_file_is_removed_at_the_next_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECULA_HOME", str(tmp_path))
    folder = tmp_path / "data" / "ngrams"
    folder.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs
    stray = folder / f"abc.tmp-{dead.pid}-140000"
    stray.write_bytes(b"half a file")
    live = folder / f"abc.tmp-{os.getppid()}-1"  # a writer that still runs: kept
    live.write_bytes(b"in progress")
    keep = folder / "abc.npz"
    keep.write_bytes(b"whole")
    monkeypatch.setattr(paths, "_swept", set())
    paths.data_dir()
    assert not stray.exists() and live.exists() and keep.exists()
