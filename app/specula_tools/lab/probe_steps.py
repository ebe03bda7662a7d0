"""Where a probe reply's time goes on a pair where drafting does not pay, step by step.

    SPECULA_HOME=$(mktemp -d) SPECULA_CPU_EXTRA_BUFFERS=0 flock /work/core1.lock taskset -c 1 \\
        env PYTHONPATH=app python -m specula_tools.lab.probe_steps --target T.gguf --draft D.gguf

The pair is calibrated at load (as the app does) and an adaptive policy answers WARM prompts
to learn it. Then each of PROBED prompts is answered by plain decoding and by that policy
made to probe the draft (as a re-check of a paused draft does), with a draft that holds
nothing of the prompt, ``--repeat`` times, sides alternating. Per reply: decode seconds and
the ratio to plain's, the draft's catch-up on the prompt (tokens, seconds, and its share
of plain's decode time), each draft-model step (k drafted, a accepted, draft and verify
milliseconds) and the median plain step; for the draft-model steps planned after the
probe's own, the policy's expected chain rate over plain's when it planned them and how
many were planned while the optimistic rate (one standard error above, while evidence is
short) was in force. A fresh SPECULA_HOME keeps a persistent n-gram cache of earlier runs
out of it (the replies are the same each time).

``--recheck``: instead of forcing a probe, each adaptive reply is the one a paused draft's
RECHECK_EVERY-reply re-check falls on; where the costs say no chain could pay even at 100%
acceptance, that re-check is a re-time (one draft step on a few tokens), and the line says
which the reply was.
"""

from __future__ import annotations

import statistics
import sys

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import Done, StepEvent, TokenOrigin
from specula.core.engine.policy.adaptive import RECHECK_EVERY, AdaptivePolicy
from specula.core.engine.policy.fixed import DraftPolicy, Plan, PlanInput
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord
from specula_tools.lab.pair_args import open_pair, pair_parser

WARM = ("unseen-csv-stats", "unseen-py-dataclass", "explain-http")
PROBED = ("unseen-ts-retry", "code-lru", "unseen-go-server")


def main() -> int:
    ap = pair_parser(__doc__, prompts_file="docs/lab/peer-prompts-six.jsonl")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--recheck", action="store_true",
                    help="the 8-reply re-check, not a forced probe")
    a = ap.parse_args()
    eng = open_pair(a, calibrate=True)
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    prompts = {p.id: p for p in load_prompts(a.prompts_file)}
    params = SamplingParams(temperature=0.0, max_tokens=a.max_tokens)
    spec, plain = SpecConfig(mode=Mode.ADAPTIVE), SpecConfig(mode=Mode.PLAIN)
    policy = AdaptivePolicy(spec)
    after: list[tuple[float, bool]] = []  # chains planned after the probe: (expected/plain, optimistic)
    plan_of = policy.plan

    def plan(inp: PlanInput) -> Plan:
        probing = policy.probe_steps_left > 0
        out = plan_of(inp)
        v1 = policy.cost.verify_time(1)
        if out.source == TokenOrigin.CHAIN and not probing and not policy.probe_step and v1:
            after.append((policy.draft_rate(policy.cfg.draft_max)[0] * v1,
                          policy.acc.optimistic_rate() is not None))
        return out

    policy.plan = plan  # type: ignore[method-assign]

    def run(pid: str, s: SpecConfig, pol: DraftPolicy) -> tuple[Done, list[StepRecord]]:
        events = list(gen.generate(eng.tokenize_chat(prompts[pid].messages), params, s, pol))
        done = events[-1]
        assert isinstance(done, Done)
        return done, [e.record for e in events if isinstance(e, StepEvent)]

    try:
        for pid in WARM:
            run(pid, spec, policy)
        v1 = policy.cost.verify_time(1) or 0.0
        print(f"after {len(WARM)} replies: one-token verify {v1 * 1e3:.0f} ms, draft decode "
              f"{(policy.cost.draft or 0.0) * 1e3:.0f} ms, some length could pay at 100% acceptance: "
              f"{policy.could_pay(v1)}; pair's rate {policy.acc.token_rate:.2f}", flush=True)
        for r in range(a.repeat):
            for pid in PROBED:
                got: dict[str, tuple[Done, list[StepRecord]]] = {}
                for side in ("plain", "adaptive") if r % 2 == 0 else ("adaptive", "plain"):
                    if side == "plain":
                        got[side] = run(pid, plain, eng.policy_for(plain))
                    else:
                        if a.recheck:  # the reply a paused draft's re-check falls on
                            policy.replies_since_probe = RECHECK_EVERY - 1
                        else:
                            policy.governor.on("clear")  # this reply probes, as a re-check does
                        gen.draft_model.reset()
                        after.clear()
                        got[side] = run(pid, spec, policy)
                base = got["plain"][0].stats.decode_s
                done, recs = got["adaptive"]
                s = done.stats
                steps = ", ".join(f"k{x.drafted} a{x.accepted} d{x.draft_s * 1e3:.0f} v{x.verify_s * 1e3:.0f}"
                                  for x in recs if x.drafted and x.draft_s > 0)
                plain_step = statistics.median(x.verify_s for x in got["plain"][1])
                same = done.token_ids == got["plain"][0].token_ids
                kind = "re-time" if policy.retiming else "probe" if s.draft_catchup_tokens else "no re-check"
                print(f"{r} {pid:18} {kind:11} plain {base:5.2f} s  adaptive {s.decode_s:5.2f} s "
                      f"{base / s.decode_s:4.2f}x  catch-up {s.draft_catchup_tokens} tok "
                      f"{s.draft_catchup_s:4.2f} s ({s.draft_catchup_s / base:.1%} of plain)  "
                      f"plain step {plain_step * 1e3:.0f} ms  draft-model steps: {steps or '-'}  "
                      f"lookup steps {sum(1 for x in recs if x.drafted and x.draft_s == 0)}  "
                      f"after the probe: {len(after)} chains planned"
                      + (f" at {min(e for e, _ in after):.3f}-{max(e for e, _ in after):.3f}x of plain expected, "
                         f"optimistic {sum(o for _, o in after)} of them" if after else "") + "  "
                      f"{'same' if same else 'DIFFERENT'}", flush=True)
    finally:
        eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
