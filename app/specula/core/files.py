"""Writing Specula's own files so that a crash, a full disk or a second writer never
leaves half a file, and keeping a damaged file instead of overwriting it.

* :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_write_json`
  (and :func:`atomic_open` for a writer that wants a file object, such as
  ``numpy.savez``) write to a temporary file with a unique name in the same folder,
  flush it to the disk, and rename it over the target in one step: a reader sees
  the old file or the new one, never a mix. On any failure (a full disk, a rename
  refused, an interrupt) the temporary file is removed and the old file is untouched.
* :func:`set_aside` renames a file that cannot be used to ``<name>.bad-<UTC time>``
  beside it (``-2``, ``-3`` when that name is taken), never over another file, so
  the user's data is kept for a look while the app starts fresh.
* :func:`sweep_stale_temps` removes the temporary files a killed process left
  (``<name>.<random>.specula-tmp``, older than a minute); the CLI calls it once at
  start for Specula's own folders.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger("specula.files")

TEMP_SUFFIX = ".specula-tmp"
# "<target name>.<tempfile's 8 random characters>.specula-tmp": nothing else is swept.
_TEMP_NAME = re.compile(r".+\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX) + r"\Z")
_PREFIX_MAX = 120  # of the target's name in the temp's, so a long name still fits in 255
STALE_AFTER_S = 60.0  # a temp this old has no writer: a write takes well under a second


@contextlib.contextmanager
def atomic_open(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; it replaces ``path`` when the
    ``with`` block ends without an exception (flushed and synced first), and is removed
    otherwise, leaving ``path`` as it was. The exception is raised again."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name[:_PREFIX_MAX]}.",
                                suffix=TEMP_SUFFIX)
    os.close(fd)  # the name is ours now; opened again by name, so ``fh.name`` is the path
    tmp = Path(name)
    try:
        fh = open(tmp, "wb")  # noqa: SIM115 (closed by the ``with`` below)
    except BaseException:
        _remove(tmp)
        raise
    try:
        with fh:
            with contextlib.suppress(OSError):  # keep a mode the user gave the file
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_folder(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step (see :func:`atomic_open`)."""
    with atomic_open(path) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` in one step (see :func:`atomic_open`)."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: Path, value: object, *, indent: int | None = None) -> None:
    """Replace ``path`` with ``value`` as JSON (UTF-8) in one step; a value that is not
    JSON raises before anything is written."""
    atomic_write_bytes(path, json.dumps(value, indent=indent).encode("utf-8"))


def _remove(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); where a folder cannot be opened
    (Windows) or synced, the rename is still atomic, only its durability is the OS's."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- damaged files ---------------------------------------------------------------------

def set_aside(path: Path, reason: str, *, copy: bool = False, keep_suffix: bool = False,
              companions: Sequence[str] = ()) -> Path:
    """Rename (or ``copy``) ``path`` to ``<name>.bad-<UTC time>`` beside it and return
    the new path; ``-2``, ``-3``... when that name is taken: never over another file.

    ``keep_suffix`` puts the suffix last (``cache.bad-<time>.npz``) for folders listed by
    suffix; ``companions`` are suffixes of files that belong to ``path`` (SQLite's
    ``-wal``, ``-journal``) and move with it. ``reason`` goes to the log. Raises
    ``OSError`` when the file cannot be moved (it is then left as it is).
    """
    stamp = _utc_stamp()
    n = 1
    while True:
        tag = f".bad-{stamp}" if n == 1 else f".bad-{stamp}-{n}"
        backup = (path.with_name(f"{path.stem}{tag}{path.suffix}") if keep_suffix
                  else path.with_name(f"{path.name}{tag}"))
        n += 1
        if any(os.path.lexists(f"{backup}{s}") for s in companions):
            continue
        try:
            _copy_new(path, backup) if copy else _move_new(path, backup)
        except FileExistsError:
            continue
        break
    for suffix in companions:
        side = path.with_name(path.name + suffix)
        if os.path.lexists(side):
            _move_new(side, backup.with_name(backup.name + suffix))
    log.info("set %s aside as %s: %s", path, backup, reason)
    return backup


def _utc_stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _move_new(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``; ``FileExistsError`` when ``dst`` exists. A hard link
    claims the new name atomically; a link, a folder or a file system without hard links
    is renamed after a check (and Windows' rename refuses an existing name itself)."""
    if not os.path.islink(src):
        try:
            os.link(src, dst)
        except FileExistsError:
            raise
        except OSError:
            pass  # a folder, or no hard links here: renamed below
        else:
            try:
                os.unlink(src)
            except OSError:
                _remove(dst)
                raise
            return
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "the name is taken", str(dst))
    os.rename(src, dst)


def _copy_new(src: Path, dst: Path) -> None:
    """Copy ``src`` to a new file ``dst`` (``FileExistsError`` when it exists)."""
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        try:
            shutil.copyfileobj(fin, fout)
        except BaseException:
            fout.close()
            os.unlink(dst)
            raise
    with contextlib.suppress(OSError):
        shutil.copystat(src, dst)


# -- stale temps -------------------------------------------------------------------------

def is_temp(path: Path) -> bool:
    """Whether ``path`` is named like one of :func:`atomic_open`'s temporary files."""
    return _TEMP_NAME.match(path.name) is not None


def sweep_stale_temps(folder: Path, *, older_than_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove the temporary files of :func:`atomic_open` under ``folder`` (and its
    subfolders, links not followed) last written more than ``older_than_s`` ago: what a
    killed or crashed write left. A younger one may be a write in progress (another
    Specula running) and is kept; nothing of another name is touched. Never raises;
    what was removed."""
    removed: list[Path] = []
    now = time.time()
    for root, _dirs, names in os.walk(folder):
        for name in names:
            p = Path(root) / name
            if not is_temp(p):
                continue
            try:
                st = p.lstat()
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > older_than_s:
                    p.unlink()
                    removed.append(p)
            except OSError:
                continue
    if removed:
        log.info("removed %d temporary file(s) a stopped write left: %s", len(removed),
                 ", ".join(str(p) for p in removed))
    return removed
