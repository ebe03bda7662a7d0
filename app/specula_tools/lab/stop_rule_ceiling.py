# Run from the repository root: PYTHONPATH=app python -m specula_tools.lab.stop_rule_ceiling
"""How much can reading the draft's confidence gain over the best fixed chain, at best?

Replays the recorded agreement of the real pair (``adaptive_sim``: the unseen peer prompts on
three machines' calibrations, the packaged code prompts on the first F16 calibration), three
passes of a session, and compares with the best fixed chain per prompt (chain:1..8, in
hindsight):

1. adaptive as it is (it learns the pair's acceptance as the replies go);
2. adaptive told the pair's acceptance instead of learning it: its confidence bins and its
   per-token rate are the in-sample figures of the whole set (every prompt, every position),
   so nothing is lost to learning;
3. the same with each prompt's own in-sample figures (the acceptance of this very text);
4. the best (chain length, p_min cut) per prompt, chosen in hindsight: llama.cpp's rule tuned
   on the answer; and the one (chain length, p_min) best for the whole set (the highest worst
   prompt), also in hindsight;
5. the per-step oracle (``adaptive_sim.step_oracle``: it knows where each rejection falls).

Lines 2-4 bound what a stop rule built on the draft's confidence can gain on these traces;
line 5 is what knowing the rejections would give.
"""
import statistics
import sys
from collections.abc import Callable

sys.path.insert(0, ".")
from tests.core.engine.adaptive_sim import (
    F16,
    F16_NOREPACK,
    Q4,
    SECOND,
    Machine,
    f16_traces,
    run_reply,
    step_oracle,
    unseen_traces,
)

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import acceptance_model as am
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, DraftPolicy

Trace = dict[str, list[float]]


class KnownAcceptance(am.AcceptanceModel):
    """The acceptance model with its answers given: confidence bins and per-token rate."""

    def __init__(self, bins: dict[int, float], rate: float) -> None:
        super().__init__()
        self.bins, self.rate = bins, rate

    @property
    def token_rate(self) -> float:
        return self.rate

    def hazard(self, j: int) -> float:
        return self.rate

    def optimistic_rate(self) -> float | None:
        return None  # the rate is known: no standard error to add

    def predict(self, p_top: float, entropy: float) -> float:
        return self.bins.get(am.confidence_bin(p_top, entropy), p_top)


def known(traces: list[Trace]) -> KnownAcceptance:
    """The in-sample acceptance of ``traces``: per confidence bin (Laplace) and overall."""
    acc: dict[int, list[float]] = {}
    n = right = 0.0
    for t in traces:
        for ok, p, h in zip(t["ok"], t["p_top"], t["entropy"], strict=True):
            a = acc.setdefault(am.confidence_bin(p, h), [0.0, 0.0])
            a[0] += ok
            a[1] += 1
            right += ok
            n += 1
    return KnownAcceptance({b: (a + 1) / (m + 2) for b, (a, m) in acc.items()}, right / n)


def rate(policy: DraftPolicy, m: Machine, t: Trace) -> float:
    r = run_reply(policy, m, t["ok"], t["p_top"], max_tokens=len(t["ok"]), entropy=t["entropy"])
    return r.tokens / r.seconds


def session(m: Machine, traces: dict[str, Trace],
            acc: Callable[[str], am.AcceptanceModel | None]) -> dict[str, float]:
    """Adaptive over three passes of the prompts: tok/s per prompt, median of the passes."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    got: dict[str, list[float]] = {}
    for _ in range(3):
        for pid, t in traces.items():
            given = acc(pid)
            if given is not None:
                pol.acc = given
            got.setdefault(pid, []).append(rate(pol, m, t))
    return {pid: statistics.median(v) for pid, v in got.items()}


def chain(m: Machine, t: Trace, k: int, p_min: float = 0.0) -> float:
    return rate(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k, p_min=p_min)), m, t)


P_MINS = (0.0, .3, .4, .5, .6, .7, .8, .9)


def set_rule(m: Machine, traces: dict[str, Trace],
             best: dict[str, float]) -> tuple[str, dict[str, float]]:
    """(its name, tok/s per prompt) of the one (chain length, p_min) whose worst prompt does best."""
    got = {(k, pm): {pid: chain(m, t, k, pm) for pid, t in traces.items()}
           for k in range(1, 9) for pm in P_MINS}
    pick = max(got, key=lambda c: min(got[c][p] / best[p] for p in traces))
    return f"one for the set: chain:{pick[0]}, p_min {pick[1]}", got[pick]


def main() -> None:
    sets = (("unseen prompts, F16 without repacking", unseen_traces(), F16_NOREPACK),
            ("unseen prompts, second machine", unseen_traces(), SECOND),
            ("unseen prompts, Q4_K_M target", unseen_traces(), Q4),
            ("packaged code prompts, F16", f16_traces(), F16))
    for title, traces, m in sets:
        pooled = known(list(traces.values()))
        best = {pid: max(chain(m, t, k) for k in range(1, 9)) for pid, t in traces.items()}
        per_prompt = {pid: known([t]) for pid, t in traces.items()}
        set_name, set_got = set_rule(m, traces, best)
        rows = {
            "adaptive, learning": session(m, traces, lambda pid: None),
            "adaptive, acceptance known (set)": session(m, traces, lambda pid, k=pooled: k),
            "adaptive, acceptance known (prompt)": session(m, traces, per_prompt.get),
            "best (k, p_min) per prompt, hindsight": {
                pid: max(chain(m, t, k, pm) for k in range(1, 9) for pm in P_MINS)
                for pid, t in traces.items()},
            set_name: set_got,
            "per-step oracle": {pid: step_oracle(m, t["ok"]) for pid, t in traces.items()},
        }
        print(f"{title}: over the best fixed chain per prompt")
        print(f"  {'':40} {'min':>6} {'median':>6}   " + " ".join(f"{p[-9:]:>9}" for p in traces))
        for name, got in rows.items():
            r = [got[p] / best[p] for p in traces]
            print(f"  {name:40} {min(r):6.3f} {statistics.median(r):6.3f}   "
                  + " ".join(f"{x:9.2f}" for x in r))
        print()


if __name__ == "__main__":
    main()
