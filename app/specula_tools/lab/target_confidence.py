"""Does the target's confidence tell the policy anything the draft's does not?

Reads traces written by ``python -m specula_tools.agreement_trace --target-confidence``
and, over every reply position, fits a logistic model of "the draft's token is the
target's" on a few feature sets, each scored on the prompts it was not fitted on
(leave one prompt out): the area under the ROC curve and the log loss.

1. At the token: the draft's top probability and entropy there (what the stop rule reads),
   with and without the target's top probability at the position before (known after the
   verify that produced it) and over the four before; and with the agreement over eight
   positions verified before a chain of up to six began (how the text has gone lately).
2. Before the token is drafted (every token before it accepted): what a rule deciding
   whether to pay for one more draft decode could read.

    PYTHONPATH=app python -m specula_tools.lab.target_confidence TRACES.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return float(np.log(p / (1 - p)))


def auc(score: np.ndarray, y: np.ndarray) -> float:
    """Mann-Whitney: the chance a right token scores above a wrong one."""
    order = np.argsort(score, kind="stable")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(len(score))
    pos = y == 1
    return float((ranks[pos].mean() - (pos.sum() - 1) / 2) / (~pos).sum())


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Ridge-regularised logistic regression by Newton's method."""
    xb = np.c_[x, np.ones(len(x))]
    w = np.zeros(xb.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-xb @ w))
        g = xb.T @ (p - y) / len(y) + l2 * w
        h = (xb.T * (p * (1 - p))) @ xb / len(y) + l2 * np.eye(len(w))
        w -= np.linalg.solve(h, g)
    return w


def held_out(x: np.ndarray, y: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    """(AUC, log loss) of scores each fitted without its own prompt."""
    s = np.zeros(len(y))
    for g in np.unique(group):
        tr = group != g
        w = fit(x[tr], y[tr])
        s[~tr] = np.c_[x[~tr], np.ones((~tr).sum())] @ w
    p = np.clip(1 / (1 + np.exp(-s)), 1e-9, 1 - 1e-9)
    return auc(s, y), float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def table(traces: dict[str, dict[str, list[float]]]) -> str:
    at, before = [], []
    for gi, t in enumerate(traces.values()):
        ok = np.asarray(t["ok"], float)
        dp, de = np.asarray(t["p_top"]), np.asarray(t["entropy"])
        tp = np.asarray(t["target_p_top"])
        for j in range(4, len(ok)):
            lately = ok[max(j - 14, 0):max(j - 6, 1)].mean() if j >= 14 else ok[:j].mean()
            at.append([gi, ok[j], logit(dp[j]), de[j], logit(tp[j - 1]), logit(min(tp[j - 4:j].mean(), 0.999)),
                       logit(min(max(lately, 0.01), 0.99))])
            if ok[j - 1] == 1:
                before.append([gi, ok[j], logit(dp[j - 1]), logit(min(dp[j - 3:j].min(), 0.999)),
                               logit(tp[j - 1]), logit(dp[j])])
    a, b = np.asarray(at), np.asarray(before)
    lines = [f"{len(traces)} prompts, {len(a)} positions, the draft right at {a[:, 1].mean():.3f}",
             "", "at the token                                   AUC    log loss"]
    for name, cols in [("draft's top probability", [2]), ("draft's top probability, entropy", [2, 3]),
                       ("+ target's top probability one before", [2, 3, 4]),
                       ("+ target's mean top probability, four before", [2, 3, 4, 5]),
                       ("+ the agreement over eight verified before", [2, 3, 6]),
                       ("target's top probability one before, alone", [4])]:
        r = held_out(a[:, cols], a[:, 1], a[:, 0])
        lines.append(f"  {name:45} {r[0]:.3f}  {r[1]:.4f}")
    lines += ["", f"before the token is drafted ({len(b)} positions, every token before accepted)"]
    for name, cols in [("draft's top probability one before", [2]), ("lowest of the three before", [3]),
                       ("+ target's top probability one before", [2, 3, 4]),
                       ("(the token's own draft probability, for scale)", [5])]:
        r = held_out(b[:, cols], b[:, 1], b[:, 0])
        lines.append(f"  {name:45} {r[0]:.3f}  {r[1]:.4f}")
    return "\n".join(lines)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"## {arg}\n{table(json.loads(Path(arg).read_text('utf-8')))}\n")
