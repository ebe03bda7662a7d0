"""Every relative link and image in README.md and docs/**/*.md points at something that exists.

Docs move (benchmarks.md's history went to dated lab notes, the README's details to
docs/development.md) and a moved section leaves dead links behind; this finds them. A link to
a heading (``file.md#anchor``) must name a heading of that file, slugged as GitHub does. Links
inside code (fenced blocks and inline spans) are text, not links, and are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
# [text](target "title") and ![alt](target); the target stops at whitespace or ')'
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_IMG_TAG = re.compile(r"<img\s[^>]*src=\"([^\"]+)\"", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files(root: Path) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _prose_lines(text: str) -> list[str]:
    """The file's lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(_INLINE_CODE.sub("", line))
    return lines


def links(text: str) -> list[str]:
    """The link and image targets of a Markdown text, in order, code excluded."""
    prose = _prose_lines(text)
    joined = "\n".join(prose)  # a link's text may wrap onto the next line
    found: list[str] = _LINK.findall(joined) + _IMG_TAG.findall(joined)
    for line in prose:
        ref = _REF_DEF.match(line)
        if ref:
            found.append(ref.group(1))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors a Markdown file's headings give (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(md: Path, root: Path) -> list[str]:
    """Each relative target of ``md`` that names no file, folder or heading, with why."""
    text = md.read_text(encoding="utf-8")
    bad: list[str] = []
    for target in links(text):
        if _SCHEME.match(target) or target.startswith("//"):
            continue  # http:, https:, mailto: ... are not this test's to check
        path_part, _, fragment = target.partition("#")
        path = (md.parent / unquote(path_part)).resolve() if path_part else md
        if path_part and not path.exists():
            bad.append(f"{target}: no such file")
            continue
        if root.resolve() not in path.parents and path != root.resolve():
            bad.append(f"{target}: outside the repository")
            continue
        if (fragment and path.suffix == ".md"
                and unquote(fragment).lower() not in anchors(path.read_text(encoding="utf-8"))):
            bad.append(f"{target}: no heading #{fragment} in {path.name}")
    return bad


@pytest.mark.parametrize("md", markdown_files(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_images_resolve(md: Path) -> None:
    assert broken_links(md, ROOT) == []


def test_the_pages_that_matter_are_checked() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in markdown_files(ROOT)}
    assert {"README.md", "docs/benchmarks.md", "docs/development.md",
            "docs/lab/README.md"} <= names


def test_a_missing_file_a_missing_heading_and_a_missing_image_are_reported(
        tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# Title\n\n## The argmax of a row, round 9\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/there.md) [ok](docs/there.md#the-argmax-of-a-row-round-9) [ok](#intro)\n"
        "[gone](docs/gone.md) [bad anchor](docs/there.md#nowhere) ![img](docs/pic.png)\n"
        "[web](https://example.com/x) `[in code](docs/nope.md)` [a wrapped\nlink](docs/far.md)\n"
        "```\n[fenced](docs/nope2.md)\n```\n"
        "# Intro\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == [
        "docs/gone.md: no such file",
        "docs/there.md#nowhere: no heading #nowhere in there.md",
        "docs/pic.png: no such file",
        "docs/far.md: no such file",
    ]


def test_slugs_follow_github() -> None:
    # GitHub's rule: punctuation dropped, then each space a hyphen (so " -m" gives "--m")
    assert slug("First token at plain's speed") == "first-token-at-plains-speed"
    assert slug("The argmax of a read-only row, and the share at a ~4 ms step (round 9)") == (
        "the-argmax-of-a-read-only-row-and-the-share-at-a-4-ms-step-round-9")
    assert slug("Where it lost (instrument: `python -m specula_tools.adaptive_trace`)") == (
        "where-it-lost-instrument-python--m-specula_toolsadaptive_trace")
