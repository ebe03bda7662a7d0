"""The stop-loss (``policy/stop_loss.py``) on the simulator: its allowance and what follows a
stop, against two cases and the whole-session replays.

Run from the repository root (the simulator is ``tests/core/engine/adaptive_sim.py``):

    PYTHONPATH=app:. python -m specula_tools.lab.stop_loss_variants

- *confidently wrong*: a pair that has drafted four replies of easy text (90%) on the F16
  machine meets three replies of a text its draft gets right at 15% of positions while
  97% sure at every one;
- *stale costs*: a new compute-bound pair (Q4_K_M) whose batch and draft figures were
  measured at 0.7x of what they cost now (its plain step as now) answers ts-retry four times;
- *replays*: ``replay_sessions.py``'s sessions (the peer prompts three times each, 12
  sessions per machine): per machine, the mean of the per-prompt medians over plain, their
  minimum, and how many are below 0.97.

Each reply: its tokens/s over plain decoding's on the same text, and its draft-model steps.
Variants: the stop-loss off (an allowance no reply reaches), STOP_SLACK of 2, 3, 4 and 6
plain steps, and with 4, the probe after a stop in the very next reply, or at a cadence
backed off first (doubled), instead of at the cadence as it stands.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
from tests.core.engine.adaptive_sim import F16, Q4, Machine, run_reply, script, unseen_traces

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import stop_loss
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import PlainPolicy
from specula.core.engine.policy.probe_cadence import PROBE_MAX
from specula_tools.lab.replay_sessions import MACHINES, session

TOKENS = 96


def _policy(m: Machine) -> AdaptivePolicy:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(pol.cost)
    return pol


def _reply(pol: AdaptivePolicy, m: Machine, ok: list[bool], p_top: list[float],
           entropy: list[float] | None = None) -> str:
    plain = run_reply(PlainPolicy(), m, ok, p_top, max_tokens=TOKENS, entropy=entropy).rate
    r = run_reply(pol, m, ok, p_top, max_tokens=TOKENS, entropy=entropy)
    return f"{r.rate / plain:.3f}x/{sum(1 for s, k, _ in r.steps if s == 'draft' and k)}"


def confidently_wrong() -> list[str]:
    pol = _policy(F16)
    for s in range(4):
        run_reply(pol, F16, *script(0.9, TOKENS, s, informative=0.9), max_tokens=TOKENS)
    ok, _ = script(0.15, TOKENS, 99, informative=0.0)
    return [_reply(pol, F16, ok, [0.97] * len(ok)) for _ in range(3)]


def stale_costs() -> list[str]:
    fast = Machine(verify=lambda n: Q4.verify(1) if n == 1 else 0.7 * Q4.verify(n), draft=0.7 * Q4.draft,
                   catchup_per_token=Q4.catchup_per_token, prompt=Q4.prompt, prompt_s=Q4.prompt_s)
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    fast.calibration().seed(pol.cost)
    t = unseen_traces()["unseen-ts-retry"]
    return [_reply(pol, Q4, t["ok"], t["p_top"], t["entropy"]) for _ in range(4)]


def replays() -> list[str]:
    traces = unseen_traces()
    out = []
    for name, m in MACHINES.items():
        plain = {}
        for pid, t in traces.items():
            n = len(t["ok"])
            plain[pid] = run_reply(PlainPolicy(), m, t["ok"], t["p_top"], max_tokens=TOKENS,
                                   entropy=t["entropy"], ends_at=n if n < TOKENS else None).rate
        medians: list[float] = []
        for seed in range(12):
            rng = np.random.default_rng(seed)
            order = [str(p) for _ in range(3) for p in rng.permutation(list(traces))]
            medians += [statistics.median(v) for v in session(m, order, plain).values()]
        md = np.array(medians)
        out.append(f"{name}: {md.mean():.3f} min {md.min():.3f} below {int(np.sum(md < 0.97))}")
    return out


def _next_reply(self: AdaptivePolicy) -> None:
    self.governor.on("stop")
    self.replies_since_probe = self.probe_every


def _backed_off(self: AdaptivePolicy) -> None:
    self.governor.on("stop")
    self.replies_since_probe = 0
    self.probe_every = min(self.probe_every * 2, PROBE_MAX)


@contextmanager
def variant(slack: float, stop: Callable[[AdaptivePolicy], None] | None = None) -> Iterator[None]:
    was_slack, was_stop = stop_loss.STOP_SLACK, AdaptivePolicy._stop
    stop_loss.STOP_SLACK = slack
    if stop is not None:
        AdaptivePolicy._stop = stop  # type: ignore[method-assign]
    try:
        yield
    finally:
        stop_loss.STOP_SLACK = was_slack
        AdaptivePolicy._stop = was_stop  # type: ignore[method-assign]


def main() -> None:
    for label, slack, stop in [("off", 1e9, None), ("slack 2", 2.0, None), ("slack 3", 3.0, None),
                               ("slack 4 (as it stands)", 4.0, None), ("slack 6", 6.0, None),
                               ("slack 4, probe the next reply", 4.0, _next_reply),
                               ("slack 4, back off, then probe", 4.0, _backed_off)]:
        with variant(slack, stop):
            print(f"{label}\n  confidently wrong: {' '.join(confidently_wrong())}\n"
                  f"  stale costs:       {' '.join(stale_costs())}")
            for line in replays():
                print(f"  replay {line}", flush=True)


if __name__ == "__main__":
    main()
