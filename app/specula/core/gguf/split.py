"""Split GGUF models (``NAME-00001-of-00003.gguf``) seen as one model.

llama.cpp's ``gguf-split`` writes big models as numbered parts, and loads them
from the first part. Both the hub listing and the local library group the
parts here, so a split model appears once, with all its parts, everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

SPLIT_RE = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class SplitName:
    stem: str  # the path without the -0000i-of-0000n.gguf suffix
    index: int  # 1-based
    count: int


def parse_split(path: str) -> SplitName | None:
    """``dir/m-00002-of-00003.gguf`` -> SplitName('dir/m', 2, 3); None for a single file."""
    m = SPLIT_RE.match(path)
    if not m:
        return None
    index, count = int(m["index"]), int(m["count"])
    if count < 1 or not 1 <= index <= count:
        return None
    return SplitName(m["stem"], index, count)


def part_names(first_part: str) -> list[str]:
    """All part names of the split model whose first part is ``first_part`` (or just it)."""
    split = parse_split(first_part)
    if split is None:
        return [first_part]
    return [f"{split.stem}-{i:05d}-of-{split.count:05d}.gguf" for i in range(1, split.count + 1)]


def is_gguf_name(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() == ".gguf"


def group_gguf(paths: Iterable[str]) -> list[list[str]]:
    """GGUF paths grouped into models: singles alone, split parts together in order.

    A split model with a missing part is still listed (with the parts present),
    so the user sees it and can complete or remove it; non-GGUF paths are dropped.
    """
    singles: list[list[str]] = []
    splits: dict[tuple[str, int], dict[int, str]] = {}
    for path in paths:
        if not is_gguf_name(path):
            continue
        split = parse_split(path)
        if split is None:
            singles.append([path])
        else:
            splits.setdefault((split.stem, split.count), {})[split.index] = path
    groups = singles + [[parts[i] for i in sorted(parts)] for parts in splits.values()]
    return sorted(groups, key=lambda g: g[0].lower())


def is_complete(group: list[str]) -> bool:
    """Whether a group from :func:`group_gguf` has all its parts."""
    split = parse_split(group[0])
    return split is None or len(group) == split.count
