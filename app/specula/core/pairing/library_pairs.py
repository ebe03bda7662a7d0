"""Which library models pair with one model: the drafts it can use, the targets it can serve.

Why: the library's details pane answers "what can I run this with?" before
anything is loaded. Index summaries rule out most models cheaply (tokenizer
type, vocabulary size); only the plausible ones get their full header
(tokens) read and go through :func:`specula.core.gguf.compat.check`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from specula.core.gguf.compat import VOCAB_MAX_SIZE_DIFFERENCE, CompatReport, check
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.library.scan import LocalModel
from specula.core.pairing.badges import model_scale


@dataclass
class Pair:
    model: LocalModel
    report: CompatReport


@dataclass
class Pairs:
    drafts: list[Pair] = field(default_factory=list)  # smaller models that can draft for it
    targets: list[Pair] = field(default_factory=list)  # larger models it can draft for
    unreadable: list[str] = field(default_factory=list)


def _plausible(a: ModelInfo, b: ModelInfo) -> bool:
    if a.tokenizer_model != b.tokenizer_model:
        return False
    if a.vocab_size is None or b.vocab_size is None:
        return True
    return abs(a.vocab_size - b.vocab_size) <= VOCAB_MAX_SIZE_DIFFERENCE


def pairs_for(model: LocalModel, library: list[LocalModel],
              cancel: threading.Event | None = None) -> Pairs:
    """Usable pairs of ``model`` with the other complete models of ``library``, best first."""
    out = Pairs()
    if model.info is None:
        return out
    try:
        me = read_model_info(model.path)
    except (GGUFError, OSError) as exc:
        out.unreadable.append(f"{model.name}: {exc}")
        return out
    my_scale = model_scale(me, model.name)
    for other in library:
        if cancel is not None and cancel.is_set():
            break
        if other.path == model.path or other.info is None or not other.complete:
            continue
        if not _plausible(me, other.info):
            continue
        try:
            full = read_model_info(other.path)
        except (GGUFError, OSError) as exc:
            out.unreadable.append(f"{other.name}: {exc}")
            continue
        scale = model_scale(full, other.name)
        if my_scale is None or scale is None or scale == my_scale:
            continue
        if scale < my_scale:
            report = check(me, full)
            if report.usable:
                out.drafts.append(Pair(other, report))
        else:
            report = check(full, me)
            if report.usable:
                out.targets.append(Pair(other, report))
    out.drafts.sort(key=lambda p: (p.report.verdict.value != "identical", p.model.size))
    out.targets.sort(key=lambda p: (p.report.verdict.value != "identical", p.model.size))
    return out
