"""`specula models ...` end to end against the fake hub, text and --json."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from collections import namedtuple
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.hub.partial_files import part_file
from tests.fixtures.fake_hub import STALL_GUARD_S, FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, SPLIT_FIRST, TARGET_FILE, TARGET_REPO


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["models", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object]:
    code, out, _err = run(capsys, *argv, "--json")
    return code, json.loads(out)


def test_search(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "search", "tiny-coder", "--sort", "likes", "--limit", "2")
    assert code == 0 and isinstance(data, list)
    assert [d["repo_id"] for d in data] == [SMALL_REPO, TARGET_REPO]
    code, out, _ = run(capsys, "search", "tiny-coder")
    assert code == 0 and out.splitlines()[1].startswith(TARGET_REPO)


def test_files(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "files", TARGET_REPO, "--headers")
    assert code == 0 and isinstance(data, dict)
    models = {m["filename"]: m for m in data["models"]}
    assert set(models) == {SPLIT_FIRST, TARGET_FILE, "tiny-coder-7b-instruct-q8_0.gguf"}
    assert models[TARGET_FILE]["header"]["n_layers"] == 4
    assert models[TARGET_FILE]["quantization"] == "F32"  # from the header, not the name
    code, out, _ = run(capsys, "files", TARGET_REPO)
    assert "GGUF quantizations of Tiny Coder" in out and "Q4_K_M" in out


def test_pull_list_rm(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str],
                      tmp_path: Path) -> None:
    models = tmp_path / "m"
    code, out, err = run(capsys, "pull", SMALL_REPO, SMALL_FILE, "--models-dir", str(models))
    assert code == 0 and "downloaded" in out and "100.0%" in err
    final = models / SMALL_REPO / SMALL_FILE
    assert final.exists()
    code, data = run_json(capsys, "pull", TARGET_REPO, SPLIT_FIRST, "--models-dir", str(models))
    assert code == 0 and isinstance(data, dict) and data["state"] == "done"
    assert len(data["paths"]) == 3

    code, data = run_json(capsys, "list", "--models-dir", str(models))
    assert code == 0 and isinstance(data, dict)
    assert [Path(m["path"]).name for m in data["models"]] == [SMALL_FILE, SPLIT_FIRST]
    assert data["models"][0]["repo_id"] == SMALL_REPO and data["read"] == 2
    code, out, _ = run(capsys, "list", "--models-dir", str(models))
    assert f"{SMALL_REPO}/{SMALL_FILE}" in out

    code, data = run_json(capsys, "rm", f"{SMALL_REPO}/{SMALL_FILE}", "--models-dir", str(models))
    assert code == 0 and data == {"removed": [str(final)]}
    assert not final.exists()
    code, out, err = run(capsys, "rm", f"{SMALL_REPO}/{SMALL_FILE}", "--models-dir", str(models))
    assert code == 2 and "no model" in err and "Traceback" not in err


def test_pull_resumes_a_part(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str],
                             tmp_path: Path) -> None:
    models = tmp_path / "m"
    fake_hub.drop_after[TARGET_FILE] = 70_000
    # The first run's retries resume by themselves; the log shows no byte twice.
    code, out, _ = run(capsys, "pull", TARGET_REPO, TARGET_FILE, "--models-dir", str(models))
    assert code == 0 and "downloaded" in out
    assert fake_hub.requests_to("/cdn/")[-1].headers["range"] == "bytes=70000-"


def test_pull_errors_are_one_line(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = str(tmp_path / "m")
    code, _, err = run(capsys, "pull", "nobody/nothing", "x-q4_0.gguf", "--models-dir", models)
    assert code == 2 and "not found" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "pull", "specula-test/Private-GGUF", "secret-q4_0.gguf",
                       "--models-dir", models)
    assert code == 2 and "HF_TOKEN" in err
    fake_hub.repos[SMALL_REPO].files[SMALL_FILE].claimed_sha256 = "1" * 64
    code, data = run_json(capsys, "pull", SMALL_REPO, SMALL_FILE, "--models-dir", models)
    assert code == 2 and isinstance(data, dict) and data["error"]["kind"] == "checksum"
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(1, 1, 0))
    code, _, err = run(capsys, "pull", TARGET_REPO, TARGET_FILE, "--models-dir", models)
    assert code == 2 and "not enough disk space" in err
    monkeypatch.undo()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    code, _, err = run(capsys, "search", "qwen")
    assert code == 2 and "cannot reach" in err and "Traceback" not in err


def test_pull_interrupted_leaves_a_resumable_part(
        fake_hub: FakeHub, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Ctrl-C (a real SIGINT) while the body is arriving keeps the .part for the next run.

    The order is pinned, not timed: the hub stalls the body after 300 KB and resumes
    only when the test releases it, after the pull has returned; the SIGINT is sent
    once the received bytes are on disk. No step waits on a clock (the bounds only
    end a broken run).
    """
    fake_hub.stall_after[TARGET_FILE] = 300_000

    part = part_file(tmp_path / "m" / TARGET_REPO / TARGET_FILE)

    def press_ctrl_c() -> None:
        if not fake_hub.stalled.wait(STALL_GUARD_S):
            return
        guard = time.monotonic() + STALL_GUARD_S
        while not (part.exists() and part.stat().st_size) and time.monotonic() < guard:
            time.sleep(0.01)  # until the received bytes are on disk
        # to the main thread itself: a process-wide kill may land on another thread, and the
        # main thread would only see it when its read timed out
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    models = tmp_path / "m"
    try:
        code, _, err = run(capsys, "pull", TARGET_REPO, TARGET_FILE, "--models-dir", str(models))
    finally:
        fake_hub.release.set()
        presser.join()
    assert code == 130 and "run the same command to resume" in err
    final = models / TARGET_REPO / TARGET_FILE
    kept = part_file(final).stat().st_size
    assert 0 < kept <= 300_000 and not final.exists()
    code, out, _ = run(capsys, "pull", TARGET_REPO, TARGET_FILE, "--models-dir", str(models))
    assert code == 0 and "resumed at" in out and final.exists()
    assert fake_hub.requests_to("/cdn/")[-1].headers["range"] == f"bytes={kept}-"


def test_drafts_for(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                    hub_models: dict[str, Path]) -> None:
    models = tmp_path / "m"
    (models / "loc").mkdir(parents=True)
    shutil.copyfile(hub_models["small"], models / "loc" / "small-f32.gguf")
    code, data = run_json(capsys, "drafts-for", f"{TARGET_REPO}/{TARGET_FILE}",
                          "--models-dir", str(models))
    assert code == 0 and isinstance(data, dict)
    assert [Path(c["source"]).name for c in data["library"]] == ["small-f32.gguf"]
    assert data["hub"]["candidates"][0]["source"] == f"{SMALL_REPO}/{SMALL_FILE}"
    assert data["hub"]["candidates"][0]["verdict"] == "identical"
    code, out, _ = run(capsys, "drafts-for", str(hub_models["big"]), "--no-hub",
                       "--models-dir", str(models))
    assert code == 0 and "small-f32.gguf" in out and "same tokenizer" in out


def test_fit(fake_hub: FakeHub, capsys: pytest.CaptureFixture[str],
             hub_models: dict[str, Path]) -> None:
    code, data = run_json(capsys, "fit", f"{TARGET_REPO}/{TARGET_FILE}", "--draft",
                          str(hub_models["small"]), "--ctx", "1024", "--gpu-free", "8")
    assert code == 0 and isinstance(data, dict) and data["verdict"] == "fits on GPU"
    assert data["target"]["weights"] == hub_models["big"].stat().st_size
    assert data["draft"]["kv_cache"] > 0 and data["n_ctx"] == 1024
    code, out, _ = run(capsys, "fit", str(hub_models["big"]), "--ram", "0.0001")
    assert code == 1 and "does not fit" in out
    code, _, err = run(capsys, "fit", str(hub_models["big"]), "--cache-type", "q3")
    assert code == 2 and "unknown cache type" in err
