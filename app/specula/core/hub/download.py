"""Download a hub model into the library: progress, pause/resume, cancel, sha256.

Why hand-rolled over ``hf_hub_download``: the GUI needs byte-level progress
with speed and ETA, a pause that survives an app restart, and a cancel checked
on every chunk. So huggingface_hub gives the URL, size and LFS sha256, and the
body is streamed here with ``requests`` and HTTP Range requests (as GPT4All
and qutebrowser do).

On disk, the incomplete file is ``NAME.gguf.part`` with a small JSON sidecar
``NAME.gguf.part.json`` naming the repo, file, size and expected sha256; a new
:class:`Download` for the same file continues where the last one stopped. The
file is renamed to ``NAME.gguf`` only after its sha256 matched, so a partial or
corrupt file never looks complete. A file the hub lists without a sha256 (not
stored with LFS) is checked for what can be checked: its header parses and the
tensor data it announces ends where the file ends
(:func:`~specula.core.gguf.structure.check_structure`); the result says "no
checksum available, verified structure". A download is a plain object (no Qt): the
GUI runs :meth:`Download.run` on a worker thread and calls :meth:`pause` or
:meth:`cancel` from its own.
"""

from __future__ import annotations

import errno
import hashlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import requests
import urllib3

from specula.core import paths
from specula.core.cancel import Cancelled
from specula.core.gguf.reader import GGUFError
from specula.core.gguf.split import part_names
from specula.core.gguf.structure import check_structure
from specula.core.hub.client import HubClient, RemoteFile, validate_filename, validate_repo_id
from specula.core.hub.errors import ErrorKind, HubError, translate
from specula.core.hub.partial_files import Sidecar, local_path, part_file, sidecar_file
from specula.core.hub.transfer_stats import SpeedMeter
from specula.core.safe_text import display_text

DISK_MARGIN = 16 * 1024 * 1024  # keep a little free space for the index and settings


class DownloadState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    VERIFYING = "verifying"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class DownloadProgress:
    """A snapshot for a progress bar; ``downloaded``/``total`` cover all parts."""

    repo_id: str
    filename: str  # the file being fetched now (a part of a split model)
    part: int  # 1-based
    parts: int
    downloaded: int
    total: int
    speed: float  # bytes per second over the last few seconds
    eta: float | None  # seconds, None while the speed is unknown
    state: DownloadState

    @property
    def fraction(self) -> float:
        return self.downloaded / self.total if self.total else 0.0


@dataclass
class DownloadResult:
    state: DownloadState
    paths: list[Path] = field(default_factory=list)
    resumed_from: int = 0  # bytes already on disk when this run started
    # How each part fetched in this run was verified: "sha256", or what the structure
    # check covered when the hub gave no checksum (path name -> sentence).
    verified: dict[str, str] = field(default_factory=dict)

    @property
    def without_checksum(self) -> list[str]:
        """The parts that had no checksum to verify against."""
        return [name for name, how in self.verified.items() if how != "sha256"]

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state.value, "paths": [str(p) for p in self.paths],
                "resumed_from": self.resumed_from, "verified": dict(self.verified)}


def _body_chunks(response: requests.Response, size: int) -> Iterator[bytes]:
    """The body as it arrives (``read1``), so bytes received before a dropped
    connection are written, not lost in a half-filled fixed-size buffer."""
    raw = response.raw
    while True:
        chunk = raw.read1(size) if hasattr(raw, "read1") else raw.read(size)
        if not chunk:
            return
        yield chunk


def _hash_existing(path: Path, size: int, stop: threading.Event) -> hashlib._Hash:
    """sha256 over the first ``size`` bytes already on disk (resume continues the hash)."""
    h = hashlib.sha256()
    left = size
    with path.open("rb") as fh:
        while left > 0:
            if stop.is_set():
                raise Cancelled
            block = fh.read(min(left, 4 << 20))
            if not block:
                break
            h.update(block)
            left -= len(block)
    return h


class Download:
    """One model (a file, or every part of a split one) from the hub into the library.

    A Download runs once: after a pause, a new Download for the same file
    resumes it (as after an app restart), so a late ``pause()`` from the GUI
    can never be lost by a reset.
    """

    def __init__(self, repo_id: str, filename: str, *, hub: HubClient | None = None,
                 models_dir: Path | None = None,
                 on_progress: Callable[[DownloadProgress], None] | None = None,
                 chunk_size: int = 1 << 20, max_retries: int = 3, retry_wait: float = 1.0,
                 progress_interval: float = 0.2) -> None:
        self.repo_id = validate_repo_id(repo_id)
        self.filename = validate_filename(filename)
        self.hub = hub or HubClient()
        self.models_dir = models_dir or paths.default_models_dir()
        self.on_progress = on_progress
        self.chunk_size = chunk_size
        self.max_retries = max_retries
        self.retry_wait = retry_wait
        self.progress_interval = progress_interval
        self.state = DownloadState.PENDING
        self._pause = threading.Event()
        self._cancel = threading.Event()
        self._stop = threading.Event()  # set by either: what the loops check
        self._meter = SpeedMeter()
        self._last_emit = 0.0
        self._done_bytes = 0
        self._total = 0
        self._current = (filename, 1, 1)
        self._resumed = 0
        self._verified: dict[str, str] = {}

    # -- control, from any thread -------------------------------------------------
    def pause(self) -> None:
        """Stop after the current chunk and keep the ``.part`` file to resume later."""
        self._pause.set()
        self._stop.set()

    def cancel(self) -> None:
        """Stop after the current chunk and delete the incomplete file."""
        self._cancel.set()
        self._stop.set()

    # -- the work, on the caller's thread -----------------------------------------
    def run(self) -> DownloadResult:
        """Download (or resume) every part; raises :class:`HubError` on failure."""
        self.state = DownloadState.RUNNING
        try:
            return self._run()
        except Cancelled:
            if self._cancel.is_set():
                self._delete_incomplete()
                self.state = DownloadState.CANCELLED
            else:
                self.state = DownloadState.PAUSED
            self._emit(force=True)
            return DownloadResult(self.state, [], self._resumed)
        except HubError:
            self.state = DownloadState.FAILED
            raise

    def _finals(self) -> list[Path]:
        return [local_path(self.models_dir, self.repo_id, n) for n in part_names(self.filename)]

    def _run(self) -> DownloadResult:
        names = part_names(self.filename)
        infos = self.hub.lfs_info(self.repo_id, names)
        for name in names:
            info = infos.get(name)
            if info is None:
                raise HubError(ErrorKind.NOT_FOUND,
                               f"{self.repo_id}/{name} was not found on the hub (404)", 404)
            if info.size is None:
                raise HubError(ErrorKind.BAD_REPLY, f"the hub gave no size for {self.repo_id}/{name}")
        finals = self._finals()
        self._total = sum(infos[n].size or 0 for n in names)
        on_disk = 0
        needed = 0
        for name, final in zip(names, finals, strict=True):
            size = infos[name].size or 0
            have = size if self._is_done(final, size) else self._usable_part(final, infos[name])
            on_disk += have
            needed += size - have
        self._resumed = on_disk
        self._done_bytes = on_disk
        self._check_space(finals[0].parent, needed)
        for i, (name, final) in enumerate(zip(names, finals, strict=True), start=1):
            self._current = (name, i, len(names))
            info = infos[name]
            if self._is_done(final, info.size or 0):
                continue
            self._fetch_part(info, final)
        self.state = DownloadState.DONE
        self._emit(force=True)
        return DownloadResult(DownloadState.DONE, finals, self._resumed, dict(self._verified))

    @staticmethod
    def _is_done(final: Path, size: int) -> bool:
        try:
            return final.is_file() and final.stat().st_size == size
        except OSError:
            return False

    def _usable_part(self, final: Path, info: RemoteFile) -> int:
        """Bytes of an existing ``.part`` we can trust; removes one that belongs to another file."""
        part, side = part_file(final), sidecar_file(final)
        sidecar = Sidecar.load(side)
        try:
            have = part.stat().st_size if part.exists() else 0
        except OSError:
            have = 0
        same = (sidecar is not None and sidecar.repo_id == self.repo_id
                and sidecar.filename == info.path and sidecar.size == info.size
                and sidecar.sha256 == info.sha256)
        if part.exists() and (not same or have > (info.size or 0)):
            part.unlink(missing_ok=True)  # another version of the file, or garbage
            have = 0
        return have

    def _check_space(self, folder: Path, needed: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
        if needed + DISK_MARGIN > free:
            raise HubError(ErrorKind.DISK_FULL,
                           f"not enough disk space in {folder}: {self.repo_id}/{self.filename} "
                           f"needs {needed / 2**20:.1f} MiB more, {free / 2**20:.1f} MiB are free")

    def _fetch_part(self, info: RemoteFile, final: Path) -> None:
        size = info.size or 0
        part, side = part_file(final), sidecar_file(final)
        Sidecar(self.repo_id, info.path, size, info.sha256).save(side)
        offset = part.stat().st_size if part.exists() else 0
        hasher = _hash_existing(part, offset, self._stop) if offset else hashlib.sha256()
        url = self.hub.file_url(self.repo_id, info.path)
        what = f"{self.repo_id}/{info.path}"
        failures = 0
        while offset < size:
            try:
                offset, hasher = self._stream(url, what, part, offset, size, hasher)
            except HubError as exc:
                if exc.kind is not ErrorKind.NETWORK:
                    raise
                failures += 1
                if failures > self.max_retries:
                    raise HubError(ErrorKind.NETWORK,
                                   f"the connection broke while fetching {what} at "
                                   f"{offset} of {size} bytes; run the download again to resume"
                                   ) from exc
                time.sleep(self.retry_wait * failures)
                offset = part.stat().st_size
        self._verify(info, part, side, final, hasher)

    def _stream(self, url: str, what: str, part: Path, offset: int, size: int,
                hasher: hashlib._Hash) -> tuple[int, hashlib._Hash]:
        """One ranged GET from ``offset``; returns the new offset (and hasher)."""
        headers = {"Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        response = self.hub.get(url, what, headers=headers, stream=True)
        with response:
            if offset and response.status_code == 200:
                self._done_bytes -= offset  # the range was ignored: start over
                offset, hasher = 0, hashlib.sha256()
                part.write_bytes(b"")
            elif offset and response.status_code != 206:
                raise HubError(ErrorKind.BAD_REPLY,
                               f"unexpected answer {response.status_code} resuming {what}")
            elif offset and not response.headers.get("Content-Range", "").startswith(
                    f"bytes {offset}-"):
                raise HubError(ErrorKind.BAD_REPLY, f"the hub answered the wrong range for {what}")
            try:
                with part.open("ab") as fh:
                    for chunk in _body_chunks(response, self.chunk_size):
                        if offset + len(chunk) > size:
                            raise HubError(ErrorKind.BAD_REPLY,
                                           f"the hub sent more bytes than {what} has ({size})")
                        fh.write(chunk)
                        hasher.update(chunk)
                        offset += len(chunk)
                        self._done_bytes += len(chunk)
                        self._meter.add(len(chunk))
                        self._emit()
                        if self._stop.is_set():
                            raise Cancelled
                if offset < size:  # the body ended early without an error
                    raise HubError(ErrorKind.NETWORK, f"the connection broke while fetching {what}")
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise HubError(ErrorKind.DISK_FULL,
                                   f"the disk is full: {what} stopped at {offset} of {size} "
                                   f"bytes; free some space and run the download again to "
                                   f"resume ({part.name} is kept)") from exc
                raise translate(exc, what, self.hub.endpoint) from exc
            except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                raise HubError(ErrorKind.NETWORK, f"the connection broke while fetching {what}") from exc
        return offset, hasher

    def _verify(self, info: RemoteFile, part: Path, side: Path, final: Path,
                hasher: hashlib._Hash) -> None:
        self.state = DownloadState.VERIFYING
        self._emit(force=True)
        got = part.stat().st_size
        if got != info.size:
            raise HubError(ErrorKind.NETWORK, f"{part.name} has {got} bytes, expected {info.size}")
        digest = hasher.hexdigest()
        if info.sha256 is not None and digest != info.sha256:
            part.unlink(missing_ok=True)
            side.unlink(missing_ok=True)
            raise HubError(ErrorKind.CHECKSUM,
                           f"checksum mismatch for {self.repo_id}/{info.path}: the hub says sha256 "
                           f"{info.sha256[:12]}…, the download is {digest[:12]}…; "
                           "the file was deleted, download it again")
        if info.sha256 is not None:
            self._verified[info.path] = "sha256"
        elif info.path.lower().endswith(".gguf"):
            try:
                self._verified[info.path] = check_structure(part).describe()
            except GGUFError as exc:
                part.unlink(missing_ok=True)
                side.unlink(missing_ok=True)
                raise HubError(ErrorKind.CHECKSUM,
                               f"{self.repo_id}/{info.path} is not a valid GGUF file (the hub "
                               f"gives no checksum for it, so its structure was checked): "
                               f"{display_text(exc.problem)}; the file was deleted") from exc
        else:
            self._verified[info.path] = "no checksum available"
        part.replace(final)
        side.unlink(missing_ok=True)
        self.state = DownloadState.RUNNING

    def _delete_incomplete(self) -> None:
        for final in self._finals():
            part_file(final).unlink(missing_ok=True)
            sidecar_file(final).unlink(missing_ok=True)

    def _emit(self, force: bool = False) -> None:
        if self.on_progress is None:
            return
        now = time.monotonic()
        if not force and now - self._last_emit < self.progress_interval:
            return
        self._last_emit = now
        speed = self._meter.speed()
        left = max(self._total - self._done_bytes, 0)
        eta = left / speed if speed > 0 else None
        name, index, count = self._current
        self.on_progress(DownloadProgress(self.repo_id, name, index, count, self._done_bytes,
                                          self._total, speed, eta, self.state))
