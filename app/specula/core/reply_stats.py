"""One reply's statistics when it was written in parts (Continue).

A continued reply is one message: its footer and its export must count every
token it holds, not only the last part's. The parts' counts and times add up;
the time to the first token is the first part's (the reply began then), so the
continuation's own wait counts as decode time, and the rates are computed again
from the sums by :class:`GenerationStats` (never averaged).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from specula.core.engine.stats import GenerationStats

# Kept from the first part: what the reply started as, and its prompt.
_FIRST = ("ttft_s", "prompt_tokens", "prefill_tokens", "prefill_s", "seed")
# Taken from the last part: how the reply ran when it ended.
_LAST = ("mode", "acceptance_rule", "draft_stopped", "plain_run")


def _stats(d: dict[str, Any]) -> GenerationStats:
    """The stored dict read back, keeping only values of each field's own kind."""
    out = GenerationStats()
    for f in fields(GenerationStats):
        default, v = getattr(out, f.name), d.get(f.name)
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(default, tuple) and isinstance(v, (list, tuple)):  # per-position counts
            setattr(out, f.name, tuple(int(x) for x in v if isinstance(x, int)))
            continue
        if (isinstance(default, str) and isinstance(v, str)) or \
                (isinstance(default, int) and isinstance(v, int)) or \
                (isinstance(default, float) and isinstance(v, (int, float))):
            setattr(out, f.name, type(default)(v))
    return out


def merge(first: dict[str, Any] | None, then: dict[str, Any]) -> dict[str, Any]:
    """The statistics of a reply whose first part ran with ``first`` and went on with
    ``then`` (both ``GenerationStats.to_dict()`` plus the page's counts)."""
    if not first:
        return dict(then)
    a, b = _stats(first), _stats(then)
    out = GenerationStats()
    for f in fields(GenerationStats):
        name = f.name
        if name in _FIRST:
            value = getattr(a, name)
        elif name in _LAST:
            value = getattr(b, name)
        elif name == "peak_rss_bytes":
            value = max(a.peak_rss_bytes, b.peak_rss_bytes)
        elif name.endswith("_per_pos"):  # added position by position
            pa, pb = getattr(a, name), getattr(b, name)
            n = max(len(pa), len(pb))
            value = tuple((pa[i] if i < len(pa) else 0) + (pb[i] if i < len(pb) else 0)
                          for i in range(n))
        else:
            value = getattr(a, name) + getattr(b, name)
        setattr(out, name, value)
    merged = out.to_dict()
    merged["parts"] = int(first.get("parts", 1) or 1) + 1
    return merged
