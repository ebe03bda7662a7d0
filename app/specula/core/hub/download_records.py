"""The downloads list the app shows, kept across restarts.

Why a file next to the ``.part`` sidecars: the sidecars say which bytes can be
resumed, but not what the user saw (a failed download's reason, a finished
one, the order). ``downloads.json`` under the data folder keeps that list;
on start a download that was running is shown as paused (nothing restarts
by itself), and a ``.part`` file with no record is added as paused too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from specula.core import files, json_files, paths
from specula.core.gguf.split import part_names
from specula.core.hub.download import DownloadState
from specula.core.hub.partial_files import incomplete_downloads

RECORDS_VERSION = 1
KEEP_FINISHED = 50  # finished, failed and cancelled entries kept in the list


@dataclass
class DownloadRecord:
    repo_id: str
    filename: str
    size: int | None = None  # all parts, when known
    state: str = DownloadState.PENDING.value
    message: str = ""  # the failure's reason, or where a finished file went
    downloaded: int = 0
    path: str = ""  # the downloaded file (first part), once done

    @property
    def key(self) -> tuple[str, str]:
        return (self.repo_id, self.filename)


def default_records_path() -> Path:
    return paths.data_dir() / "downloads.json"


def load_records(path: Path | None = None, models_dir: Path | None = None) -> list[DownloadRecord]:
    """The saved list, running ones turned paused, plus unlisted ``.part`` files as paused."""
    path = path or default_records_path()
    records: list[DownloadRecord] = []
    data = json_files.load(json_files.JsonFile(
        path, "downloads list", {"version": int, "downloads": list},
        consequence="The list starts empty (unfinished downloads are still found)")).value
    if data is not None and data.get("version") == RECORDS_VERSION:
        for raw in data.get("downloads") or []:
            if not isinstance(raw, dict):
                continue
            rec = _record(raw)
            if rec is None:
                continue
            if rec.state not in {s.value for s in DownloadState}:
                continue
            if rec.state in (DownloadState.RUNNING.value, DownloadState.VERIFYING.value,
                             DownloadState.PENDING.value):
                rec.state = DownloadState.PAUSED.value
            records.append(rec)
    known = {r.key for r in records}
    for _final, side, have in incomplete_downloads(models_dir):
        first = part_names(side.filename)[0]  # a split model is listed once
        if (side.repo_id, first) in known:
            continue
        records.append(DownloadRecord(side.repo_id, first, side.size, DownloadState.PAUSED.value,
                                      "", have))
        known.add((side.repo_id, first))
    return records


_RECORD_FIELDS: dict[str, json_files.Kind] = {
    "repo_id": str, "filename": str, "size": (int, type(None)), "state": str, "message": str,
    "downloaded": int, "path": str}


def _record(raw: dict[str, object]) -> DownloadRecord | None:
    """One saved entry, or None when a value has the wrong kind (the entry is dropped)."""
    try:
        json_files.check_fields(raw, _RECORD_FIELDS)
    except json_files.JsonError:
        return None
    if not isinstance(raw.get("repo_id"), str) or not isinstance(raw.get("filename"), str):
        return None
    size, downloaded = raw.get("size"), raw.get("downloaded", 0)
    return DownloadRecord(str(raw["repo_id"]), str(raw["filename"]),
                          size if isinstance(size, int) else None,
                          str(raw.get("state", "pending")), str(raw.get("message", "")),
                          downloaded if isinstance(downloaded, int) else 0,
                          str(raw.get("path", "")))


def save_records(records: list[DownloadRecord], path: Path | None = None) -> None:
    """Write the list atomically; old finished entries beyond :data:`KEEP_FINISHED` are dropped."""
    path = path or default_records_path()
    finished = {DownloadState.DONE.value, DownloadState.FAILED.value, DownloadState.CANCELLED.value}
    kept: list[DownloadRecord] = []
    ended = 0
    for rec in reversed(records):
        if rec.state in finished:
            ended += 1
            if ended > KEEP_FINISHED:
                continue
        kept.append(rec)
    kept.reverse()
    data = {"version": RECORDS_VERSION, "downloads": [asdict(r) for r in kept]}
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        files.atomic_write_json(path, data)
    except OSError:
        pass  # not saved: a .part file with no record is still found as paused
