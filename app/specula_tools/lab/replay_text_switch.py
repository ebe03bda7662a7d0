# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.replay_text_switch
"""A text switch after a paused stretch, replayed: three replies of hard text (the draft right
about half the time, in bursts), then five easy ones, on the F16 machine of ``adaptive_sim``;
adaptive over chain:5 per reply, and the tree steps (docs/lab/2026-12-02-second-machine.md)."""
import sys

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import F16, run_reply, script

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy

pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=12, tree_width=2))
F16.calibration().seed(pol.cost)
texts = ([("hard", *script(0.5, 96, seed=s, bursty=True)) for s in range(3)]
         + [("easy", *script(0.97, 96, seed=10 + s, bursty=True)) for s in range(5)])
for i, (kind, ok, p) in enumerate(texts):
    r = run_reply(pol, F16, ok, p, max_tokens=96)
    c5 = run_reply(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=5)), F16, ok, p, max_tokens=96)
    drafted = sum(1 for src, _, _ in r.steps if src != "target")
    print(f"{i} {kind}  adaptive / chain:5 {r.rate / c5.rate:.2f}  drafting steps {drafted} of {len(r.steps)}")
