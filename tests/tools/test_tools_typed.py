"""The host-cost tools are checked like the core: ``mypy --strict`` finds nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["host_costs.py", "host_profile.py", "adaptive_trace.py", "choice_costs.py", "vocab_proxy.py",
         "policy_costs.py", "agreement_trace.py", "cli.py"]


def test_the_host_tools_pass_mypy_strict() -> None:
    files = [str(Path("app/specula_tools") / name) for name in TOOLS]
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", *files], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
