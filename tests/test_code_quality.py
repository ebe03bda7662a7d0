"""The checks CI runs on the code itself: ruff, mypy --strict on specula.core, the server and the commands,
and the import-linter contracts (specula.core never imports Qt, the GUI or the server)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    exe = BIN / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed (pip install -e '.[test]')")
    return found


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    # app/ on the path: specula_tools (a development package, not installed) is checked too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "app"), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


def test_ruff() -> None:
    r = _run(_tool("ruff"), "check", "app", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict() -> None:
    r = _run(_tool("mypy"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_contracts() -> None:
    r = _run(_tool("lint-imports"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_readme_has_exactly_two_setup_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert text.count("<!-- app-command -->") == 1
    assert text.count("<!-- test-command -->") == 1
