# The adaptive policy against the best fixed chain (draft_max 8) on the simulator of tests/core/engine/adaptive_sim.py.
# Run from the repository root: PYTHONPATH=app:. python -m specula_tools.lab.sim_stop_rule_compare
import sys

sys.path.insert(0, '.')
from tests.core.engine.test_adaptive_convergence import (
    F16,
    GPU,
    Q4,
    _adaptive,
    _best_fixed,
    _session,
)

for name, m in (("F16", F16), ("GPU", GPU), ("Q4", Q4)):
    for rate in (0.6, 0.75, 0.9):
        for bursty in (False, True):
            seeds = range(8)
            best, k = _best_fixed(m, rate, seeds, bursty=bursty, draft_max=8)
            pol = _adaptive(m, draft_max=8)
            r, _ = _session(pol, m, rate, seeds, bursty=bursty)
            print(f"{name} rate {rate} bursty {bursty!s:5}: best k={k} {best:.2f}  adaptive {r:.2f}  ratio {r/best:.3f}")
