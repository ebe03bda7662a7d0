"""docs/architecture.md stays a map a reader can take in: at most 250 lines, none over 120
characters, and every file or folder it names exists (a bare module name is looked up in the
folder its section and list item name, so a name that exists elsewhere does not pass)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
APP = ROOT / "app"
PKG = APP / "specula"
SECTIONS = {"`core/` outside": PKG, "The engine": PKG / "core/engine", "`server/`": PKG / "server",
            "`gui/`": PKG / "gui", "The chat page": PKG / "gui/chat", "`commands/`": PKG / "commands",
            "`specula_tools/`": APP / "specula_tools"}
GENERAL = [ROOT, APP, PKG, PKG / "core", PKG / "core/engine", PKG / "server", ROOT / "tests",
           ROOT / "tests/gui", ROOT / "docs"]
NOT_PATHS = {"owner/repo/file", "adaptive/", "ngrams/"}  # a hub id; folders in the user's data_dir()


def _bases(line: str, fenced: bool, scope: Path | None, item_dir: Path | None, s: str) -> list[Path]:
    """Where a path mention on ``line`` is looked up."""
    if fenced:
        return [ROOT, PKG, APP, PKG / "core", PKG / "core/engine"]
    if line.startswith("#"):
        return [*GENERAL, PKG]
    if scope is not None and s.split("/")[0] in ("core", "gui", "server", "commands", "tests"):
        return [PKG, ROOT]
    return ([item_dir] if item_dir else []) + ([scope] if scope else []) + (GENERAL if scope is None else [])


def missing_paths(text: str) -> tuple[int, list[str]]:
    """(path mentions checked, those that name nothing in the tree)."""
    bad: list[str] = []
    checked, fenced = 0, False
    scope: Path | None = None
    item_dir: Path | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if line.startswith("## "):
            scope = None
        for key, folder in SECTIONS.items():
            if (line.startswith("#") or line.startswith("The chat page")) and key in line:
                scope = folder
        item = re.match(r"- `([\w/]+/)`( modules)?:", line)
        if item and scope is not None:
            item_dir = scope / item.group(1)
        elif line.startswith("- ") or not line.startswith("  "):
            item_dir = None
        spans = re.findall(r"[\w./*-]+(?:\.py|\.md|/)", line) if fenced else re.findall(r"`([^`]+)`", line)
        for span in spans:
            s = span.split(":")[0].split("<")[0].strip()
            if not re.fullmatch(r"[\w./*-]+", s) or not (s.endswith((".py", "/", ".md")) or "/" in s):
                continue
            if s in NOT_PATHS:
                continue
            checked += 1
            if not any(glob.glob(str(b / s)) for b in _bases(line, fenced, scope, item_dir, s)):
                bad.append(s)
    return checked, bad


def test_the_map_is_short() -> None:
    lines = DOC.read_text().splitlines()
    assert len(lines) <= 250
    assert [i + 1 for i, line in enumerate(lines) if len(line) > 120] == []


def test_every_path_the_map_names_exists() -> None:
    checked, bad = missing_paths(DOC.read_text())
    assert checked > 200 and bad == []


def test_a_wrong_path_is_found() -> None:
    """The checker itself: a renamed module, and a module named in the wrong package."""
    text = DOC.read_text()
    assert "emitter.py" in missing_paths(text.replace("`emit.py`", "`emitter.py`", 1))[1]
    assert "server/locale.py" in missing_paths(text.replace("server/local.py", "server/locale.py", 1))[1]
