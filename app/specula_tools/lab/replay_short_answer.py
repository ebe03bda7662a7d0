# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.replay_short_answer
"""The draft's first catch-up held back for a short answer's length on a pair where drafting
barely pays (rates.SHORT_ANSWER, rates.NEAR_TIE; docs/lab/2026-12-02-short-answer.md).

One session per machine passes over the six peer prompts three times (the real F16 pair's
agreement, adaptive_sim.unseen_traces), every reply with 96 tokens of room as the peer
benchmark asks; explain-http ends after 18 tokens, as its real answer does, where the policy
cannot know it will. Each reply's tokens/s over plain decoding's on the same reply. "before":
SHORT_ANSWER = 0 (every first catch-up paid up front, as until now).
Two more sessions on the F16 machine without repacking, with a 110- and a 200-token prompt."""
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import F16, F16_NOREPACK, Q4, SECOND, run_reply, unseen_traces

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import rates
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy

MACHINES = [("Q4_K_M", Q4), ("F16, no repacking", F16_NOREPACK), ("F16 (adaptive_sim)", F16),
            ("second machine", SECOND),
            ("F16, no repacking, 110-token prompt", replace(F16_NOREPACK, prompt=110, prompt_s=0.95)),
            ("F16, no repacking, 200-token prompt", replace(F16_NOREPACK, prompt=200, prompt_s=1.72))]
TRACES = unseen_traces()


def rate(pol, m, t):
    return run_reply(pol, m, t["ok"], t["p_top"], max_tokens=96, entropy=t["entropy"],
                     ends_at=len(t["ok"])).rate


def session(m):
    plain = {p: rate(PlainPolicy(), m, t) for p, t in TRACES.items()}
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    out = {p: [] for p in TRACES}
    for _ in range(3):
        for p, t in TRACES.items():
            out[p].append(rate(pol, m, t) / plain[p])
    return out


for name, m in MACHINES:
    print(name)
    for label, sa in (("before", 0), ("after ", 24)):
        rates.SHORT_ANSWER = sa
        got = session(m)
        allr = [x for r in got.values() for x in r]
        cells = " | ".join(f"{p.removeprefix('unseen-')} " + " ".join(f"{x:.2f}" for x in r) for p, r in got.items())
        print(f"  {label} mean {statistics.mean(allr):.3f} min {min(allr):.2f}: {cells}")
