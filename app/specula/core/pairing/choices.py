"""The chat's draft picker: the recent drafts and the library's suitable ones, checked once.

Why in the core: the picker lists the drafts the user chose before (each
checked against the target, incompatible ones kept but disabled with the
reason) followed by every library draft that suits the target, as decided by
:func:`specula.core.pairing.drafts.library_drafts`; the same file is listed
once, whichever folder it sits in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specula.core.gguf.compat import check
from specula.core.gguf.draft_head import is_head
from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.drafts import library_drafts, same_file


@dataclass(frozen=True)
class DraftChoice:
    path: str
    name: str  # what the picker shows
    usable: bool
    reason: str  # why (the tooltip)


def _label(info: ModelInfo, path: str) -> str:
    return f"{info.display_name}  ({Path(path).name})"


def draft_choices(target: str, recent: list[str], library: list[LocalModel]) -> list[DraftChoice]:
    """The picker's entries for ``target``: usable first, recent ones in their order.

    Reads headers (run it off the GUI thread); raises when the target's header is unreadable.
    """
    t_info = read_model_info(target)
    own = same_file(Path(target).name, t_info.file_size)
    out: list[DraftChoice] = []
    listed: set[tuple[str, int | None]] = {own}
    for path in recent:
        try:
            info = read_model_info(path)
        except Exception as exc:  # any unreadable file: listed, disabled, with why
            out.append(DraftChoice(path, Path(path).name, False, f"Unreadable: {exc}"))
            continue
        key = same_file(Path(path).name, info.file_size)
        if key in listed or is_head(info):
            continue  # a draft head is listed among the heads (pairing.heads)
        listed.add(key)
        report = check(t_info, info)
        out.append(DraftChoice(path, _label(info, path), report.usable, report.reason()))
    for cand in library_drafts(t_info, library, Path(target)):
        key = same_file(cand.name, cand.info.file_size)
        if key in listed:
            continue
        listed.add(key)
        out.append(DraftChoice(cand.source, _label(cand.info, cand.source), True,
                               cand.report.reason()))
    out.sort(key=lambda e: not e.usable)  # stable: compatible first, recent order kept
    return out
