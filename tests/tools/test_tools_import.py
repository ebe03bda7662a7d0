"""Every developer tool imports: a tool is the evidence behind a lab note or a test's
traces, and a module moved in the engine must not leave one broken unnoticed."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import specula_tools

TOOLS = sorted(m.name for m in pkgutil.iter_modules(specula_tools.__path__))


def test_the_tools_are_found() -> None:
    assert {"agreement_trace", "adaptive_trace", "peer_bench"} <= set(TOOLS)


@pytest.mark.parametrize("name", TOOLS)
def test_the_tool_imports(name: str) -> None:
    importlib.import_module(f"specula_tools.{name}")
