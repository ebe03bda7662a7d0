"""The saved downloads list survives a restart, and a bad file loses nothing else (no Qt)."""

from __future__ import annotations

import json
from pathlib import Path

from specula.core.hub.download_records import DownloadRecord, load_records, save_records
from specula.core.hub.partial_files import Sidecar, local_path, part_file, sidecar_file


def test_records_survive_a_restart(tmp_path: Path) -> None:
    path, models = tmp_path / "downloads.json", tmp_path / "models"
    save_records([DownloadRecord("a/b", "x.gguf", 10, "running", "", 4),
                  DownloadRecord("a/b", "y.gguf", 10, "failed", "checksum mismatch")], path)
    final = local_path(models, "c/d", "m-00002-of-00002.gguf")
    final.parent.mkdir(parents=True)
    part_file(final).write_bytes(b"12345")
    Sidecar("c/d", "m-00002-of-00002.gguf", 9, None).save(sidecar_file(final))
    records = load_records(path, models)
    assert [(r.filename, r.state) for r in records] == [
        ("x.gguf", "paused"), ("y.gguf", "failed"), ("m-00001-of-00002.gguf", "paused")]
    assert records[1].message == "checksum mismatch" and records[2].downloaded == 5
    path.write_text(json.dumps({"version": 1, "downloads": [{"repo_id": 3}]}), encoding="utf-8")
    assert [r.repo_id for r in load_records(path, models)] == ["c/d"]
