"""Adaptive over whole sessions on the simulator: the six peer prompts three times each, in
a random order per session, a new pair per session (its calibration at load), each reply's
tokens/s over plain decoding's on the same reply. Per machine: the mean reply ratio, its
5th percentile and minimum, the share of replies below 0.97, and the same for each
prompt's median over its three replies (the peer benchmark's per-prompt figure).

Run from the repository root (the simulator is ``tests/core/engine/adaptive_sim.py``; the
recorded agreement is the F16 pair's on the peer prompts, greedy):

    PYTHONPATH=app:. python -m specula_tools.lab.replay_sessions [--sessions 12]

To replay an older policy on the same simulator, put that commit's ``app`` first:
``git worktree add /tmp/before COMMIT`` and ``PYTHONPATH=/tmp/before/app:.``.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from tests.core.engine.adaptive_sim import (
    F16_NOREPACK,
    Q4,
    Q4_DEAR_DRAFT,
    SECOND,
    Machine,
    run_reply,
    unseen_traces,
)

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy

if not hasattr(AdaptivePolicy, "sync_after"):  # an older policy fed a probe after the first token
    AdaptivePolicy.sync_after = lambda self: 0  # type: ignore[method-assign]

MACHINES = {"Q4_K_M": Q4, "Q4_K_M, dear draft": Q4_DEAR_DRAFT, "F16": F16_NOREPACK, "F16, second VM": SECOND}


def session(m: Machine, order: list[str], plain: dict[str, float]) -> dict[str, list[float]]:
    traces = unseen_traces()
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    out: dict[str, list[float]] = {p: [] for p in traces}
    for pid in order:
        t = traces[pid]
        n = len(t["ok"])
        r = run_reply(pol, m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"],
                      ends_at=n if n < 96 else None)
        out[pid].append(r.rate / plain[pid])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sessions", type=int, default=12)
    a = ap.parse_args()
    traces = unseen_traces()
    for name, m in MACHINES.items():
        plain = {}
        for pid, t in traces.items():
            n = len(t["ok"])
            plain[pid] = run_reply(PlainPolicy(), m, t["ok"], t["p_top"], max_tokens=96,
                                   entropy=t["entropy"], ends_at=n if n < 96 else None).rate
        replies: list[float] = []
        medians: list[float] = []
        for seed in range(a.sessions):
            rng = np.random.default_rng(seed)
            order = [str(p) for _ in range(3) for p in rng.permutation(list(traces))]
            per = session(m, order, plain)
            replies += [r for v in per.values() for r in v]
            medians += [statistics.median(v) for v in per.values()]
        r, md = np.array(replies), np.array(medians)
        print(f"{name:20} replies: mean {r.mean():.3f}  p5 {np.percentile(r, 5):.3f}  min {r.min():.3f}  "
              f"below 0.97 {np.mean(r < 0.97):.2f}   per-prompt medians: mean {md.mean():.3f}  "
              f"min {md.min():.3f}  below 0.97 {np.mean(md < 0.97):.2f} ({int(np.sum(md < 0.97))} of {len(md)})",
              flush=True)


if __name__ == "__main__":
    main()
