# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.real_traces_replay LABEL
"""Trace-driven replay: the adaptive policy and fixed chains over the real draft/target
agreement of the F16 code prompts (greedy), timed by the F16 calibration."""
import sys

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import F16, f16_traces, run_reply

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy

S = f16_traces()

def replay(policy, m, ok, p_top, ent):
    """tok/s of one reply over the trace (the simulator's loop, with the trace's entropies)."""
    r = run_reply(policy, m, ok, p_top, max_tokens=len(ok), entropy=ent)
    return r.tokens / r.seconds

def run(label):
    fixed = {}
    for pid, s in S.items():
        fixed[pid] = {k: replay(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k)), F16, s["ok"], s["p_top"], s["entropy"]) for k in range(1, 9)}
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    F16.calibration().seed(pol.cost)
    ratios = {}
    for _rep in range(3):
        for pid, s in S.items():
            r = replay(pol, F16, s["ok"], s["p_top"], s["entropy"])
            ratios.setdefault(pid, []).append(r / max(fixed[pid].values()))
    import statistics
    med = {p: statistics.median(v) for p, v in ratios.items()}
    print(label, " ".join(f"{p[5:]}:{v:.2f}" for p, v in med.items()), "median", round(statistics.median(med.values()), 3), "min", round(min(med.values()), 3))
    print("   best fixed:", " ".join(f"{p[5:]}:k{max(f, key=f.get)}" for p, f in fixed.items()))
run(sys.argv[1] if len(sys.argv) > 1 else "current")
