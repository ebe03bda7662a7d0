"""Atomic writes, set-aside of damaged files and the sweep of stale temps (core/files.py).

Each test states the rule it guards; the expected contents are the bytes the test
itself wrote, never something computed by the module under test.
"""

from __future__ import annotations

import calendar
import errno
import io
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from specula.core import files

OLD = b'{"old": "content the user had"}'


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Names in ``folder`` other than ``keep``: a temp left behind shows up here."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_bytes(OLD)
    return path


# -- atomic writes -----------------------------------------------------------------------

def test_a_write_replaces_the_file_and_leaves_nothing_else(target: Path) -> None:
    files.atomic_write_json(target, {"new": [1, 2]}, indent=2)
    assert target.read_bytes() == b'{\n  "new": [\n    1,\n    2\n  ]\n}'
    files.atomic_write_text(target, "héllo")
    assert target.read_bytes() == "héllo".encode()
    assert leftovers(target.parent, {target.name}) == []


def test_a_new_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "new.bin"
    files.atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert leftovers(tmp_path, {"new.bin"}) == []


class FullDisk(io.BufferedWriter):
    """A file on a disk that fills up after ``room`` bytes: the write that crosses it
    puts what fits on the disk, then raises ENOSPC, as write(2) does."""

    room = 10

    def __init__(self, raw: io.FileIO) -> None:
        super().__init__(raw)
        self.used = 0

    def write(self, data: bytes) -> int:  # type: ignore[override]
        fits = bytes(data)[: max(0, self.room - self.used)]
        self.used += len(fits)
        super().write(fits)
        super().flush()
        if len(fits) < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return len(data)


def test_a_full_disk_keeps_the_old_file_and_leaves_no_temp(
        target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[FullDisk] = []

    def full_disk_open(path: Path, mode: str) -> FullDisk:
        opened.append(FullDisk(io.FileIO(path, mode)))
        return opened[-1]

    monkeypatch.setattr(files, "open", full_disk_open, raising=False)
    with pytest.raises(OSError) as info:
        files.atomic_write_bytes(target, b"x" * 1000)
    assert info.value.errno == errno.ENOSPC
    assert len(opened) == 1 and opened[0].used == 10  # the temp did get half a file
    assert target.read_bytes() == OLD
    assert leftovers(target.parent, {target.name}) == []


@pytest.mark.parametrize("step", ["replace", "fsync", "write"])
def test_a_write_that_fails_half_way_keeps_the_old_file_and_leaves_no_temp(
        target: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    def boom(*a: object, **k: object) -> None:
        raise OSError(errno.EIO, f"{step} failed")

    if step == "replace":
        monkeypatch.setattr(os, "replace", boom)
    elif step == "fsync":
        monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match=f"{step} failed"), files.atomic_open(target) as fh:
        fh.write(b"half of the new ")
        if step == "write":
            boom()
        fh.write(b"content")
    assert target.read_bytes() == OLD
    assert leftovers(target.parent, {target.name}) == []


def test_an_interrupt_or_a_value_that_is_not_json_leaves_no_temp(target: Path) -> None:
    with pytest.raises(KeyboardInterrupt), files.atomic_open(target) as fh:
        fh.write(b"half")
        raise KeyboardInterrupt
    with pytest.raises(TypeError):
        files.atomic_write_json(target, {"x": object()})
    assert target.read_bytes() == OLD
    assert leftovers(target.parent, {target.name}) == []


def test_two_writers_at_once_never_share_a_temp_and_each_lands_whole(target: Path) -> None:
    with files.atomic_open(target) as a:
        a.write(b"A" * 4096)
        with files.atomic_open(target) as b:
            assert b.name != a.name
            b.write(b"B" * 10)
        assert target.read_bytes() == b"B" * 10  # b's file, whole, while a still writes
        a.write(b"A" * 4096)
    assert target.read_bytes() == b"A" * 8192
    assert leftovers(target.parent, {target.name}) == []


def test_many_threads_writing_one_file_leave_one_whole_payload(target: Path) -> None:
    payloads = [bytes([65 + i]) * (50_000 + i) for i in range(8)]
    names: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(payloads))

    def write(data: bytes) -> None:
        start.wait()
        for _ in range(5):
            with files.atomic_open(target) as fh:
                with lock:
                    names.append(str(fh.name))
                fh.write(data[: len(data) // 2])
                fh.write(data[len(data) // 2:])

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_bytes() in payloads
    assert leftovers(target.parent, {target.name}) == []
    assert len(names) == 40


def test_the_temp_is_beside_the_target_and_named_to_be_recognised(target: Path) -> None:
    with files.atomic_open(target) as fh:
        tmp = Path(str(fh.name))
    assert tmp.parent == target.parent
    assert tmp.name.startswith("settings.json.") and tmp.name.endswith(".specula-tmp")
    assert files.is_temp(tmp)


def test_a_mode_the_user_gave_the_file_is_kept(target: Path) -> None:
    os.chmod(target, 0o640)
    files.atomic_write_bytes(target, b"new")
    assert target.stat().st_mode & 0o777 == 0o640


# -- set aside ----------------------------------------------------------------------------

STAMP = "20261202T020304Z"


@pytest.fixture
def stamp(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(files, "_utc_stamp", lambda: STAMP)
    return STAMP


def test_the_stamp_is_the_utc_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30: a local time would show
    time.tzset()
    try:
        before = time.time()
        stamp = files._utc_stamp()
        after = time.time()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert re.fullmatch(r"\d{8}T\d{6}Z", stamp)
    seconds = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    assert int(before) - 1 <= seconds <= after  # gmtime() may read a coarser clock: -1 s


def test_a_damaged_file_is_moved_beside_itself(target: Path, stamp: str) -> None:
    backup = files.set_aside(target, "not JSON")
    assert backup == target.with_name(f"settings.json.bad-{STAMP}")
    assert backup.read_bytes() == OLD and not target.exists()


def test_set_aside_never_overwrites(target: Path, stamp: str) -> None:
    taken = {target.with_name(f"settings.json.bad-{STAMP}"): b"first",
             target.with_name(f"settings.json.bad-{STAMP}-2"): b"second"}
    for p, data in taken.items():
        p.write_bytes(data)
    backup = files.set_aside(target, "again")
    assert backup == target.with_name(f"settings.json.bad-{STAMP}-3")
    assert backup.read_bytes() == OLD
    for p, data in taken.items():
        assert p.read_bytes() == data
    target.write_bytes(b"copied")
    copy = files.set_aside(target, "copy", copy=True)
    assert copy == target.with_name(f"settings.json.bad-{STAMP}-4")
    assert copy.read_bytes() == b"copied" and target.read_bytes() == b"copied"
    assert backup.read_bytes() == OLD


def test_a_folder_in_the_way_is_moved_aside_too(tmp_path: Path, stamp: str) -> None:
    folder = tmp_path / "settings.json"
    folder.mkdir()
    (folder / "inside").write_bytes(b"kept")
    (tmp_path / f"settings.json.bad-{STAMP}").mkdir()  # taken, even though empty
    backup = files.set_aside(folder, "a folder")
    assert backup.name == f"settings.json.bad-{STAMP}-2"
    assert (backup / "inside").read_bytes() == b"kept" and not folder.exists()


def test_keep_suffix_and_companions(tmp_path: Path, stamp: str) -> None:
    cache = tmp_path / "abc.npz"
    cache.write_bytes(b"npz")
    assert files.set_aside(cache, "x", keep_suffix=True).name == f"abc.bad-{STAMP}.npz"
    db = tmp_path / "c.sqlite3"
    db.write_bytes(b"db")
    (tmp_path / "c.sqlite3-wal").write_bytes(b"wal")
    (tmp_path / f"c.sqlite3.bad-{STAMP}-wal").write_bytes(b"someone's")  # name of 1 taken
    backup = files.set_aside(db, "damaged", companions=("-wal", "-shm", "-journal"))
    assert backup.name == f"c.sqlite3.bad-{STAMP}-2"
    assert (tmp_path / f"c.sqlite3.bad-{STAMP}-2-wal").read_bytes() == b"wal"
    assert (tmp_path / f"c.sqlite3.bad-{STAMP}-wal").read_bytes() == b"someone's"
    assert not db.exists() and not (tmp_path / "c.sqlite3-wal").exists()


def test_a_file_that_is_not_there_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        files.set_aside(tmp_path / "missing.json", "gone")
    assert list(tmp_path.iterdir()) == []


# -- stale temps --------------------------------------------------------------------------

def age(path: Path, seconds: float) -> Path:
    t = time.time() - seconds
    os.utime(path, (t, t))
    return path


def left_by_a_killed_write(target: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp exactly as atomic_open names it, left as a killed process would."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with monkeypatch.context() as m:
        m.setattr(files, "_remove", lambda tmp: None)  # killed: no clean-up runs
        with pytest.raises(KeyboardInterrupt), files.atomic_open(target) as fh:
            fh.write(b"half a file")
            name = Path(str(fh.name))
            raise KeyboardInterrupt
    assert name.exists()
    return name


def test_the_sweep_removes_only_our_stale_temps(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    stale = [age(left_by_a_killed_write(tmp_path / "settings.json", monkeypatch), 120),
             age(left_by_a_killed_write(tmp_path / "ngrams" / "t.npz", monkeypatch), 61)]
    young = left_by_a_killed_write(tmp_path / "downloads.json", monkeypatch)  # in progress
    others = []
    for name in ("settings.json.tmp", "tmpab12cd34.tmp", "t.tmp-123-456", "notes.specula-tmp",
                 "settings.json.bad-20261202T020304Z", "x.ABCDEFGH.specula-tmp"):
        (tmp_path / name).write_bytes(b"not ours")
        others.append(age(tmp_path / name, 3600))
    removed = files.sweep_stale_temps(tmp_path)
    assert sorted(removed) == sorted(stale)
    assert not any(p.exists() for p in stale)
    assert young.exists() and all(p.exists() for p in others)


def test_the_sweep_does_not_follow_links_and_never_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = age(left_by_a_killed_write(tmp_path / "outside" / "a.json", monkeypatch), 120)
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    (ours / "x.json.abcdefgh.specula-tmp").symlink_to(theirs)
    age(theirs, 120)
    assert files.sweep_stale_temps(ours) == [] and theirs.exists()
    assert files.sweep_stale_temps(tmp_path / "no-such-folder") == []


def test_the_cli_sweeps_specula_s_folders_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from specula import cli
    from specula.core import paths

    stale = [age(left_by_a_killed_write(folder / name, monkeypatch), 120) for folder, name in (
        (paths.config_dir(), "settings.json"), (paths.data_dir() / "adaptive", "x.json"),
        (paths.cache_dir() / "remote-headers", "h.bin"))]
    assert cli.main(["ngrams"]) == 0
    assert not any(p.exists() for p in stale)


def test_json_written_is_what_json_reads(target: Path) -> None:
    value = {"a": [1, 2.5, None, True], "b": "ü"}
    files.atomic_write_json(target, value)
    assert json.loads(target.read_bytes()) == value
