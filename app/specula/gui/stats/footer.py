"""The one-line statistics under a reply, from GenerationStats.to_dict()."""

from __future__ import annotations

from collections.abc import Mapping

STOP_REASONS = {
    "eos": "end of turn", "stop": "stop string", "length": "token limit",
    "context_full": "context full", "cancelled": "stopped by you", "error": "error",
}


def _num(d: Mapping[str, object], key: str) -> float:
    v = d.get(key, 0)
    return float(v) if isinstance(v, (int, float)) else 0.0


def footer_text(stats: Mapping[str, object], stop_reason: str = "") -> str:
    """`41.2 tok/s · 128 tokens · TTFT 0.21 s · 96/120 draft accepted (80%) · 3.2/step · chain`."""
    parts = [
        f"{_num(stats, 'tokens_per_s'):.1f} tok/s",
        f"{int(_num(stats, 'tokens'))} tokens",
        f"TTFT {_num(stats, 'ttft_s'):.2f} s",
    ]
    drafted, accepted = int(_num(stats, "drafted")), int(_num(stats, "accepted"))
    if drafted:
        parts.append(f"{accepted}/{drafted} draft tokens accepted ({accepted / drafted:.0%})")
        parts.append(f"{_num(stats, 'mean_accepted_per_step'):.2f} accepted/step")
    mode = str(stats.get("mode", ""))
    if mode:
        rule = str(stats.get("acceptance_rule", ""))
        parts.append(f"{mode} ({rule})" if rule and mode != "plain" else mode)
    if stop_reason:
        parts.append(STOP_REASONS.get(stop_reason, stop_reason))
    return "  ·  ".join(parts)
