"""The benchmark's report as text (what ``specula bench`` prints)."""

from __future__ import annotations

from specula.core.bench.results import BenchReport, RunResult


def format_report(report: BenchReport) -> str:
    lines: list[str] = []
    by_prompt: dict[str, list[RunResult]] = {}
    for r in report.runs:
        by_prompt.setdefault(f"{r.prompt_id} (repeat {r.repeat})", []).append(r)
    hdr = f"  {'mode':<10}{'tok/s':>8}{'speedup':>9}{'TTFT s':>8}{'accept':>8}{'per step':>9}{'host %':>7}  identical"
    for key, rs in by_prompt.items():
        plain = next((r for r in rs if r.mode == "plain"), None)
        lines.append(f"{key}  [{rs[0].category}]")
        lines.append(hdr)
        for r in rs:
            sp = r.tok_per_s / plain.tok_per_s if plain and plain.tok_per_s else 0.0
            ident = "-" if r.identical is None else ("yes" if r.identical else _div_text(r))
            lines.append(
                f"  {r.mode:<10}{r.tok_per_s:>8.1f}{sp:>8.2f}x{r.ttft_s:>8.2f}"
                f"{r.acceptance:>8.0%}{r.mean_accepted_per_step:>9.2f}{100 * r.host_share:>7.1f}  {ident}"
            )
    lines.append("")
    lines.append("Summary (speedup = tok/s over plain's in the same run; median [min-max])")
    lines.append(f"  {'mode':<10}{'tok/s':>8}{'speedup':>22}{'TTFT s':>8}{'xplain':>7}{'accept':>8}{'per step':>9}{'host %':>7}{'RSS MB':>8}{'total':>7}  identical")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        rng = f"{s['speedup_median']:.2f}x [{s['speedup_min']:.2f}-{s['speedup_max']:.2f}]"
        lines.append(
            f"  {mode:<10}{s['tok_per_s_median']:>8.1f}{rng:>22}{s['ttft_s_median']:>8.2f}{s['ttft_vs_plain']:>6.2f}x"
            f"{s['acceptance']:>8.0%}{s['mean_accepted_per_step']:>9.2f}"
            f"{100 * s['host_share_median']:>7.1f}{s['peak_rss_mb']:>8.0f}"
            f"{s['total_vs_plain']:>6.2f}x  {s['identical']}"
        )
    lines.append("")
    lines.append("Host share (time outside llama_decode; the drafter's Python included), median")
    lines.append(f"  {'mode':<10}{'reply %':>9}{'step %':>8}{'step p90 %':>12}{'drafter %':>11}"
                 f"{'host us/step':>14}{'step us':>10}")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        lines.append(
            f"  {mode:<10}{100 * s['host_share_median']:>9.1f}{100 * s['host_share_step_median']:>8.1f}"
            f"{100 * s['host_share_step_p90']:>12.1f}{100 * s['draft_host_share_median']:>11.1f}"
            f"{s['host_us_per_step_median']:>14.1f}{s['step_us_median']:>10.1f}"
        )
    lines.append("")
    lines.append("Draft catch-up on tokens it had not seen (the prompt, sit-outs), median per reply")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        if s.get("draft_catchup_s_median") or s.get("draft_catchup_tokens_median"):
            lines.append(f"  {mode:<10}{s['draft_catchup_s_median']:>8.2f} s"
                         f"{s['draft_catchup_tokens_median']:>8.0f} tokens")
    lines.extend(_format_per_pos(report.summary))
    lines.extend(_format_memory(report.summary))
    lines.append("")
    lines.append("Speedup by category (median)")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        cats = s["speedup_by_category"]
        assert isinstance(cats, dict)
        lines.append(f"  {mode:<10}" + "  ".join(f"{c} {v:.2f}x" for c, v in cats.items()))
    lines.extend(_format_oracle(report.oracle))
    if report.skipped:
        lines.extend(["", "Skipped (what this target cannot run)", *(f"  {n}" for n in report.skipped)])
    return "\n".join(lines)


def _format_per_pos(summary: dict[str, object]) -> list[str]:
    """Acceptance per draft position (llama.cpp's n_acc_tokens_per_pos), per mode that
    drafted: of the proposals that reached position i, the share accepted through it."""
    rows = [(m, s) for m, s in summary.items() if isinstance(s, dict) and s.get("drafted_per_pos")]
    if not rows:
        return []
    lines = ["", "Accepted per draft position (accepted/drafted, all runs)"]
    for mode, s in rows:
        cells = [f"{i + 1}: {a}/{d} {a / d:.0%}" if d else f"{i + 1}: 0/0"
                 for i, (a, d) in enumerate(zip(s.get("accepted_per_pos") or [], s["drafted_per_pos"], strict=False))]
        lines.append(f"  {mode:<10}" + "  ".join(cells))
    if any(str(mode).startswith("tree") for mode, _ in rows):
        lines.append("  (a tree: position = depth, a step counted once at each depth its tree reached; "
                     "its accept above is per node, of every node drafted on every branch)")
    return lines


def _format_memory(summary: dict[str, object]) -> list[str]:
    """What keeping a recurrent or hybrid target exact cost (nothing on attention memory)."""
    rows = [(m, s) for m, s in summary.items()
            if isinstance(s, dict) and s.get("memory", "attention") != "attention"]
    if not rows:
        return []
    lines = ["", f"Recurrent memory ({rows[0][1]['memory']}): checkpoints and replay, median per reply",
             f"  {'mode':<10}{'ckpt KB':>9}{'ckpt ms/step':>14}{'replayed':>10}{'replay ms/step':>16}"
             f"{'draft re-fed':>14}"]
    for mode, s in rows:
        lines.append(
            f"  {mode:<10}{s['checkpoint_bytes'] / 1024:>9.0f}{s['checkpoint_ms_per_step_median']:>14.3f}"
            f"{s['replayed_tokens_median']:>10.0f}{s['replay_ms_per_step_median']:>16.3f}"
            f"{s['draft_replayed_tokens_median']:>14.0f}"
        )
    return lines


def _format_oracle(orc: dict[str, object]) -> list[str]:
    if not orc:
        return []
    best = orc["best_fixed"]
    vs = orc["vs_best_fixed"]
    assert isinstance(best, dict) and isinstance(vs, dict)
    lines = ["", "Against the best fixed chain per prompt (median tok/s over repeats)"]
    modes = [m for m in vs if not str(m).startswith("chain")]
    lines.append(f"  {'prompt':<22}{'best fixed':>12}{'tok/s':>8}" + "".join(f"{m:>11}" for m in modes))
    for pid, b in best.items():
        cells = "".join(f"{vs[m]['per_prompt'].get(pid, 0.0):>10.2f}x" for m in modes)
        lines.append(f"  {pid:<22}{b['mode']:>12}{b['tok_per_s']:>8.1f}{cells}")
    lines.append("  " + "  ".join(f"{m}: median {vs[m]['median']:.2f}x, min {vs[m]['min']:.2f}x" for m in modes))
    held = orc.get("vs_best_fixed_held_out")
    if isinstance(held, dict) and held:
        lines.append("  held out (the best fixed chain chosen on the other repeats, judged on each): "
                     + "  ".join(f"{m} median {h['median']:.2f}x, min {h['min']:.2f}x"
                                 for m, h in held.items() if m in modes))
    return lines


def _div_text(r: RunResult) -> str:
    d = r.divergence or {}
    gap = d.get("plain_top2_gap")
    gap_s = f"{gap:.3f}" if isinstance(gap, float) else "?"
    return f"no: from token {d.get('index')} (plain top-2 gap {gap_s})"
