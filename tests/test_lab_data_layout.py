"""Each lab note's raw data lies in one folder beside it, ``docs/lab/data/<note>/`` (the note's
file name without ``.md``), and nowhere else under docs/: a reader of a note finds its data in
one place, and a folder of outputs nobody's note owns cannot build up again."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def misplaced(docs: Path) -> list[str]:
    """The files under ``docs`` that are neither a page, a screenshot, a shared prompt file of
    the lab, nor raw data in the folder of an existing note; and each data folder that names
    no note."""
    lab = docs / "lab"
    bad: list[str] = []
    for path in sorted(p for p in docs.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(docs)
        if path.suffix == ".md" and "data" not in rel.parts:
            continue
        if rel.parts[0] == "screenshots" or (rel.parent == Path("lab") and path.suffix == ".jsonl"):
            continue
        if rel.parts[:2] == ("lab", "data") and len(rel.parts) >= 4:
            continue  # its folder is checked below
        bad.append(rel.as_posix())
    data = lab / "data"
    for folder in sorted(d for d in data.iterdir() if d.is_dir()) if data.is_dir() else []:
        if not (lab / f"{folder.name}.md").is_file():
            bad.append(f"lab/data/{folder.name}/: no note lab/{folder.name}.md")
    return bad


def test_every_raw_file_lies_beside_its_note() -> None:
    assert misplaced(ROOT / "docs") == []


def test_a_loose_file_and_a_folder_without_its_note_are_found(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for rel in ["benchmarks.md", "screenshots/a.png", "lab/2026-01-01-x.md", "lab/prompts.jsonl",
                "lab/data/2026-01-01-x/run.txt", "bench/adaptive/run.json", "lab/loose.txt",
                "lab/data/2026-01-02-gone/run.txt", "lab/data/stray.txt"]:
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text("x")
    assert misplaced(docs) == ["bench/adaptive/run.json", "lab/data/stray.txt", "lab/loose.txt",
                               "lab/data/2026-01-02-gone/: no note lab/2026-01-02-gone.md"]
