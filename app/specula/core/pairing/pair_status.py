"""What one file is as the draft of one target, worded once for every view.

Why: the chat's draft picker said "— incompatible: The two models use
different kinds of tokenizer" while Load defaults' "Draft to pair" offered the
same file unmarked, and My Models only said it in a disabled button's tooltip
(as "...tokenizer.; ..."). Every view now asks :func:`pair_status`, which asks
:func:`specula.core.pairing.drafts.judge` (the one decision on drafts), and
shows its :attr:`PairStatus.mark` and :attr:`PairStatus.why` as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from specula.core.gguf import compat_sentences
from specula.core.gguf.compat import CompatReport
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.drafts import Role, judge, role_of, same_file
from specula.core.pairing.names import model_scale


class PairKind(str, Enum):
    SUITS = "suits"  # it can draft for the target, and is smaller
    INCOMPATIBLE = "incompatible"  # llama.cpp refuses the pair
    LARGER = "larger"  # compatible, but larger than the target: no speed-up
    SAME_SIZE = "same size"  # compatible, as large as the target: no speed-up
    TARGET = "target"  # the target's own file


_MARKS = {PairKind.SUITS: "", PairKind.INCOMPATIBLE: "incompatible",
          PairKind.LARGER: "larger than the target", PairKind.SAME_SIZE: "same size as the target",
          PairKind.TARGET: "the target itself"}


@dataclass(frozen=True)
class PairStatus:
    kind: PairKind
    why: str  # one short sentence, no final stop (fits in brackets or after a colon)
    detail: str  # every reason, as sentences (a tooltip)

    @property
    def usable(self) -> bool:
        """Worth choosing as the draft."""
        return self.kind is PairKind.SUITS

    @property
    def mark(self) -> str:
        """A few words a list shows beside the name ("" when it suits)."""
        return _MARKS[self.kind]

    @property
    def suffix(self) -> str:
        """What follows the name in a picker: '  — incompatible: <why>' ('' when it suits)."""
        if self.kind is PairKind.SUITS:
            return ""
        if self.kind is PairKind.INCOMPATIBLE:
            return f"  — incompatible: {self.why}"
        return f"  — {self.mark}"


def why_not(report: CompatReport) -> str:
    """The first reason a draft is refused, for a list: 'The two models use different kinds
    of tokenizer (and 2 more)' (no sentence stop inside a picker's entry)."""
    sentences = compat_sentences.refusal_sentences(report)
    if not sentences:
        return report.reason().rstrip(".")
    more = len(sentences) - 1
    return sentences[0].rstrip(".") + (f" (and {more} more)" if more else "")


def refusal_text(report: CompatReport) -> str:
    """Every reason as sentences ('A. B.'), never 'A.; B.'."""
    return " ".join(compat_sentences.refusal_sentences(report)) or report.reason()


def pair_status(target: ModelInfo, target_name: str, draft: ModelInfo,
                draft_name: str) -> PairStatus:
    """``draft`` (full header, with tokens) as the draft of ``target``: suits / incompatible
    (why) / larger or as large as the target / the target itself."""
    if same_file(Path(target_name).name, target.file_size) == same_file(
            Path(draft_name).name, draft.file_size):
        return PairStatus(PairKind.TARGET, "it is the target's own file",
                          f"{target.display_name} is the target.")
    cand = judge(target, target_name, draft, draft_name, "", "", None)
    report = cand.report
    if not report.usable:
        return PairStatus(PairKind.INCOMPATIBLE, why_not(report),
                          f"Cannot draft for {target.display_name}: {refusal_text(report)}")
    if cand.suits:
        return PairStatus(PairKind.SUITS, ", ".join(cand.reasons),
                          f"Can draft for {target.display_name}: {', '.join(cand.reasons)}.")
    role = role_of(model_scale(target, target_name), model_scale(draft, draft_name))
    kind = PairKind.SAME_SIZE if role is Role.SAME else PairKind.LARGER
    word = "as large as" if kind is PairKind.SAME_SIZE else "larger than"
    return PairStatus(kind, f"{word} {target.display_name}: no speed-up",
                      f"Not smaller than {target.display_name} ({word} it): drafting with it "
                      "gains nothing.")


def library_statuses(target: ModelInfo, target_name: str, library: Sequence[LocalModel],
                     cancel: threading.Event | None = None) -> dict[str, PairStatus]:
    """:func:`pair_status` of every readable, complete library file as the draft of ``target``
    (path -> status). Reads headers: run it off the GUI thread."""
    out: dict[str, PairStatus] = {}
    for m in library:
        if cancel is not None and cancel.is_set():
            break
        if m.info is None or not m.complete:
            continue
        try:
            full = read_model_info(m.path)
        except (GGUFError, OSError):
            continue  # the row already says it is unreadable
        out[str(m.path)] = pair_status(target, target_name, full, m.name)
    return out
