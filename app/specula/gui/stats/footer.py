"""The one-line statistics under a reply, from GenerationStats.to_dict() (plus our counts).

The figures come from :mod:`specula.gui.stats.live_stats`, the same ones the
live panel shows, so the panel and the footer agree when a reply ends.
"""

from __future__ import annotations

from collections.abc import Mapping

from specula.core.pairing.heads import mode_label
from specula.gui.stats import live_stats as ls

STOP_REASONS = {
    "eos": "end of turn", "stop": "stop string", "length": "token limit",
    "context_full": "context full", "cancelled": "stopped by you", "error": "error",
}


def footer_text(stats: Mapping[str, object], stop_reason: str = "") -> str:
    """`41.2 tok/s · 128 tokens · TTFT 0.21 s · 96/120 draft tokens accepted (80%) · ...`."""
    f = ls.figures_from_dict(dict(stats))
    parts = [
        f"{ls.format_rate(f)} tok/s" if f.rate is not None else f"{ls.DASH} tok/s (too short to measure)",
        f"{f.tokens} tokens",
        f"TTFT {f.ttft_s:.2f} s" if f.ttft_s is not None else f"TTFT {ls.DASH}",
    ]
    if f.drafted:
        parts.append(f"{f.accepted}/{f.drafted} draft tokens accepted ({ls.format_acceptance(f)})")
        parts.append(f"{ls.format_per_step(f)} accepted/step")
    note = ls.drafting_note(f)
    if note:
        parts.append(note)
    mode = str(stats.get("mode", ""))
    if mode:
        rule = str(stats.get("acceptance_rule", ""))
        shown = mode_label(mode)  # a head's mode by the head: "EAGLE-3 head"
        parts.append(f"{shown} ({rule})" if rule and mode != "plain" else shown)
        if rule and rule != "greedy" and stats.get("seed") is not None:
            # A sampled reply is reproducible from its seed (drawn when the settings said -1).
            parts.append(f"seed {stats['seed']}")
    if stop_reason:
        parts.append(STOP_REASONS.get(stop_reason, stop_reason))
    return "  ·  ".join(parts)
