# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.replay_oracle
"""How far a draft-length policy can go: the best fixed chain, adaptive, and a per-step
oracle over the real F16 pair's agreement on the peer prompts (``adaptive_sim.unseen_traces``),
timed by two machines' calibrations (docs/lab/2026-12-02-second-machine.md).

The oracle knows where each step's first rejection falls: it drafts exactly the run that will
be accepted (at most 8), or nothing where a plain step is faster. It is greedy per step, so
a fixed chain can beat it on a reply, and it always pays the draft's prompt catch-up (adaptive
skips it on a reply it keeps plain: explain-http); on the code prompts it bounds what reading the
draft's confidence can gain.
Adaptive runs as a new pair's first pass (the calibration's costs, nothing learnt)."""
import sys

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import (
    F16_NOREPACK,
    SECOND,
    run_reply,
    step_oracle,
    unseen_traces,
)

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy

TRACES = unseen_traces()


def rate(policy, m, t):
    r = run_reply(policy, m, t["ok"], t["p_top"], max_tokens=len(t["ok"]), entropy=t["entropy"])
    return r.tokens / r.seconds


for name, m in (("first machine (F16_NOREPACK)", F16_NOREPACK), ("second machine", SECOND)):
    print(name)
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    for pid, t in TRACES.items():
        fixed = {k: rate(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k)), m, t) for k in range(1, 9)}
        kb = max(fixed, key=fixed.__getitem__)
        ad, orc = rate(pol, m, t), step_oracle(m, t["ok"])
        print(f"  {pid:22} best fixed chain:{kb} {fixed[kb]:.2f} tok/s  adaptive {ad:.2f} "
              f"({ad / fixed[kb]:.2f}x)  oracle {orc:.2f} ({orc / fixed[kb]:.2f}x)")
