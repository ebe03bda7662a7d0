"""Every name a lab tool (app/specula_tools/lab) imports still exists: the tools are
the commands behind the lab notes' figures and reach into the policy and the simulator, so a
rename there must not leave a note's command broken unnoticed. Running them all would cost
most of a minute; resolving their imports costs nothing and catches what breaks most often."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "app" / "specula_tools" / "lab").glob("*.py") if p.name != "__init__.py")


def imported_names(source: str) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from module import name``; (module, None) for ``import module``."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
    return out


def missing(source: str) -> list[str]:
    """The imports of ``source`` that do not resolve here."""
    bad = []
    for module, name in imported_names(source):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            bad.append(module)
            continue
        if name is not None and not hasattr(mod, name):
            try:  # a submodule imported by name
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                bad.append(f"{module}.{name}")
    return bad


def test_the_scripts_are_found() -> None:
    assert {"replay_oracle.py", "stop_rule_ceiling.py", "probe_cost.py"} <= {p.name for p in SCRIPTS}
    assert len(SCRIPTS) == 19  # 18 tools and pair_args.py, the arguments they share


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_import_of_the_script_resolves(script: Path) -> None:
    assert missing(script.read_text("utf-8")) == []


def test_a_renamed_name_is_caught() -> None:
    """Power: the check fails on a name the simulator no longer has, and on a lost module."""
    assert missing("from tests.core.engine.adaptive_sim import F16, F16_RENAMED\n") == [
        "tests.core.engine.adaptive_sim.F16_RENAMED"]
    assert missing("import specula.core.engine.policy.gone\n") == ["specula.core.engine.policy.gone"]
    assert missing("from specula.core.engine.policy import adaptive\n") == []
