# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.replay_probe_evidence
"""A probe of a paused draft, with and without the pair's rate made to weigh as PROBE_EVIDENCE
tokens before it (docs/lab/2026-12-02-probe-evidence.md). Sessions of bursty scripted text on
three machines: ten hard replies then five easy ones ("switch"), fifteen hard, eight easy, and
two hard, two easy, four times ("mixed"); six sessions of each (different seeds). Each reply's
tokens/s over the best of plain, chain:3 and chain:5 on the same reply; mean and minimum by kind
of text (h: hard, e: easy)."""
import statistics
import sys

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import F16, F16_NOREPACK, Q4, Machine, run_reply, script

import specula.core.engine.policy.probe_cadence as probe_cadence
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, PlainPolicy

MACHINES = [("F16 (adaptive_sim)", F16, 0.5), ("F16, no repacking", F16_NOREPACK, 0.5), ("Q4_K_M", Q4, 0.6)]
SCENARIOS = [("switch", [("h", 10), ("e", 5)]), ("hard", [("h", 15)]), ("easy", [("e", 8)]),
             ("mixed", [("h", 2), ("e", 2)] * 4)]
_best: dict[tuple[str, int], float] = {}


def best(name: str, m: Machine, seed: int, ok: list[bool], p: list[float]) -> float:
    if (name, seed) not in _best:
        rates = [run_reply(PlainPolicy(), m, ok, p, max_tokens=96).rate]
        rates += [run_reply(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k)), m, ok, p, max_tokens=96).rate
                  for k in (3, 5)]
        _best[(name, seed)] = max(rates)
    return _best[(name, seed)]


def main(trials: int = 6) -> None:
    """Each machine and scenario over ``trials`` sessions, before and after the shrink."""
    for evidence in (1e9, 12.0):
        probe_cadence.PROBE_EVIDENCE = evidence
        print("without the shrink (before)" if evidence > 1e6 else f"PROBE_EVIDENCE = {evidence:g} (now)")
        for name, m, hard in MACHINES:
            cells = []
            for scen, plan in SCENARIOS:
                got: dict[str, list[float]] = {"h": [], "e": []}
                for trial in range(trials):
                    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=12, tree_width=2))
                    m.calibration().seed(pol.cost)
                    i = 0
                    for kind, n in plan:
                        for _ in range(n):
                            seed = 1000 * trial + i + (0 if kind == "h" else 500)
                            i += 1
                            ok, p = script(hard if kind == "h" else 0.97, 96, seed=seed, bursty=True)
                            r = run_reply(pol, m, ok, p, max_tokens=96)
                            got[kind].append(r.rate / best(name, m, seed, ok, p))
                cells.append(scen + " " + " ".join(f"{k} {statistics.mean(v):.3f} (min {min(v):.2f})"
                                                   for k, v in got.items() if v))
            print(f"  {name:20s} " + " | ".join(cells))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
