"""Markdown tables from a ``specula bench --json`` file (for docs/benchmarks.md).

``python -m specula_tools.bench_report RESULT.json`` prints a per-prompt table of
speedups over plain (same run) and the summary the benchmark computed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def report(path: Path) -> str:
    data = json.loads(path.read_text("utf-8"))
    runs = data["runs"]
    modes = list(dict.fromkeys(r["mode"] for r in runs))
    plain = {(r["prompt_id"], r["repeat"]): r for r in runs if r["mode"] == "plain"}
    lines = [
        "| prompt | category | plain tok/s | " + " | ".join(m for m in modes if m != "plain") + " |",
        "|---|---|---|" + "---|" * (len(modes) - 1),
    ]
    keys = list(dict.fromkeys((r["prompt_id"], r["repeat"]) for r in runs))
    for key in keys:
        p = plain[key]
        cells = []
        for m in modes:
            if m == "plain":
                continue
            r = next(x for x in runs if (x["prompt_id"], x["repeat"]) == key and x["mode"] == m)
            ratio = r["tok_per_s"] / p["tok_per_s"] if p["tok_per_s"] else 0.0
            mark = "" if r.get("identical") in (None, True) else " ≠"
            cells.append(f"{ratio:.2f}x ({r['acceptance']:.0%}){mark}")
        lines.append(f"| {key[0]} | {p['category']} | {p['tok_per_s']:.1f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| mode | speedup median [min-max] | by category | TTFT s (x plain) | acceptance "
                 "| accepted/step | Python overhead | identical to plain |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for m, s in data["summary"].items():
        cats = ", ".join(f"{c} {v:.2f}x" for c, v in s["speedup_by_category"].items())
        lines.append(
            f"| {m} | {s['speedup_median']:.2f}x [{s['speedup_min']:.2f}-{s['speedup_max']:.2f}] | {cats} "
            f"| {s['ttft_s_median']:.2f} ({s.get('ttft_vs_plain', 0.0):.2f}x) "
            f"| {s['acceptance']:.0%} | {s['mean_accepted_per_step']:.2f} "
            f"| {100 * s['overhead_fraction_median']:.1f}% | {s['identical']} |"
        )
    lines.extend(oracle_table(data.get("oracle") or {}))
    return "\n".join(lines)


def oracle_table(orc: dict) -> list[str]:  # type: ignore[type-arg]
    """Per prompt: the best fixed chain (median over repeats) and each other mode against it."""
    if not orc:
        return []
    best, vs = orc["best_fixed"], orc["vs_best_fixed"]
    modes = [m for m in vs if not m.startswith("chain")]
    lines = ["", "| prompt | best fixed chain | tok/s | " + " | ".join(f"{m} / best" for m in modes) + " |",
             "|---|---|---|" + "---|" * len(modes)]
    for pid, b in best.items():
        cells = " | ".join(f"{vs[m]['per_prompt'].get(pid, 0.0):.2f}x" for m in modes)
        lines.append(f"| {pid} | {b['mode']} | {b['tok_per_s']:.1f} | {cells} |")
    lines.append("| **median [min]** | | | " + " | ".join(
        f"{vs[m]['median']:.2f}x [{vs[m]['min']:.2f}]" for m in modes) + " |")
    return lines


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path, help="specula bench --json files")
    for path in ap.parse_args().results:
        print(report(path))
        print()
