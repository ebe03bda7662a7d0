# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.sibling_replay
"""A chain with siblings: does the draft's second choice, verified beside its first, pay?

At a position where the draft is unsure (top probability below ``theta``), the second
choice goes into the verify batch as a leaf beside the chain's token, up to ``budget`` such
leaves a step. It costs no draft decode (both come from the same logits), only a verify node.
Where the chain's first miss falls on such a position and the second choice is the target's
token, the step yields one token more (the target's token after the leaf). Replayed on the
peer prompts' agreement (``real-traces-f16-unseen.json``, whose ``second`` says where the
target's token is the draft's second choice) with each machine's verify curve, as fixed
chains with and without leaves.
"""
import json
import statistics
import sys

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import F16, F16_NOREPACK, Q4, SECOND, UNSEEN_TRACES, Machine

Trace = dict[str, list[float]]


def chain_rate(m: Machine, t: Trace, k: int, theta: float = 0.0, budget: int = 0) -> float:
    """tok/s of chain:k over the trace, with up to ``budget`` leaves below ``theta`` a step."""
    ok, p, second = t["ok"], t["p_top"], t["second"]
    n, pos, secs, lag = len(ok), 1, m.prompt_s, 1
    while pos < n:
        kk = min(k, n - pos - 1)
        if kk <= 0:
            secs += m.verify(1)
            pos += 1
            continue
        leaves = [i for i in range(kk) if p[pos + i] < theta][:budget]
        acc = 0
        while acc < kk and ok[pos + acc]:
            acc += 1
        emitted = acc + 1
        if acc < kk and acc in leaves and second[pos + acc]:
            emitted += 1  # the leaf was the target's token: the target's next one comes too
        secs += m.feed(lag) + (kk - 1) * m.draft + m.verify(kk + 1 + len(leaves))
        lag = 2 if emitted > acc + 1 or acc == kk else 1
        pos += min(emitted, n - pos)
    return (pos - 1) / secs


def main() -> None:
    traces: dict[str, Trace] = json.loads(UNSEEN_TRACES.read_text())
    ok = [o for t in traces.values() for o in t["ok"]]
    hit = [s for t in traces.values() for o, s in zip(t["ok"], t["second"], strict=True) if not o]
    print(f"{len(ok)} positions, {len(hit)} misses, the second choice right at {sum(hit)} of them\n")
    for name, m in (("F16 without repacking", F16_NOREPACK), ("second machine", SECOND),
                    ("F16", F16), ("Q4_K_M target", Q4)):
        print(f"{name}: the best chain with leaves over the best chain without (k = 1..8)")
        for theta in (0.5, 0.7, 0.9):
            for budget in (1, 2):
                r = [max(chain_rate(m, t, k, theta, budget) for k in range(1, 9))
                     / max(chain_rate(m, t, k) for k in range(1, 9)) for t in traces.values()]
                print(f"  below {theta}, at most {budget} a step: min {min(r):.3f} median "
                      f"{statistics.median(r):.3f} max {max(r):.3f}")
        print()


if __name__ == "__main__":
    main()
