"""Every developer tool imports and answers ``--help``: a tool is the evidence behind a lab
note or a test's traces, so a module moved in the engine must not leave one broken
unnoticed, and asking a tool how to use it must not run it (a screenshot tool once took
``--help`` for its output folder)."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import specula_tools

TOOLS = sorted(m.name for m in pkgutil.iter_modules(specula_tools.__path__) if not m.ispkg)
APP = Path(specula_tools.__file__).resolve().parents[1]
# the tools run as commands (the rest are libraries the tests and the other tools use)
COMMANDS = [n for n in TOOLS
            if 'if __name__ == "__main__"' in (APP / "specula_tools" / f"{n}.py").read_text("utf-8")]

# Runs each tool as ``python -m specula_tools.NAME --help`` would, in one interpreter (one
# start-up instead of twenty): the exit status of each, printed as JSON.
HELP_ALL = """
import contextlib, io, json, runpy, sys
codes = {}
for name in sys.argv[1:]:
    sys.argv = [name, "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_module(f"specula_tools.{name}", run_name="__main__")
        codes[name] = "returned without exiting"
    except SystemExit as e:
        codes[name] = e.code
    except BaseException as e:
        codes[name] = repr(e)
print(json.dumps(codes))
"""


def test_the_tools_are_found() -> None:
    assert {"agreement_trace", "adaptive_trace", "peer_bench"} <= set(TOOLS)


@pytest.mark.parametrize("name", TOOLS)
def test_the_tool_imports(name: str) -> None:
    importlib.import_module(f"specula_tools.{name}")


def test_every_tool_answers_help_and_writes_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(APP), "QT_QPA_PLATFORM": "offscreen",
           "SPECULA_HOME": str(tmp_path / "home")}
    work = tmp_path / "cwd"
    work.mkdir()
    r = subprocess.run([sys.executable, "-c", HELP_ALL, *COMMANDS], cwd=work, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    codes = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(COMMANDS) >= 15
    assert codes == {name: 0 for name in COMMANDS}
    assert list(work.iterdir()) == []  # nothing written where it ran
