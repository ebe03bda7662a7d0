"""Where an adaptive reply loses time against plain decoding, measured inside the reply.

    SPECULA_HOME=$(mktemp -d) SPECULA_CPU_EXTRA_BUFFERS=0 flock /work/core1.lock taskset -c 1 \\
        env PYTHONPATH=app python -m specula_tools.lab.reply_losses --target T.gguf --draft D.gguf

One adaptive policy, the pair calibrated at load as the app does, answers the prompts
``--repeat`` times in order. Each reply is judged against its own plain steps, not against
another reply: a drafted step's loss is its wall time less the emitted tokens at the
reply's median plain step, summed separately over prompt lookup's steps and the draft
model's, plus the draft's catch-up outside steps; the estimate is the reply's tokens at
the plain step over that plus the losses. On a VM whose speed drifts by a fifth within
minutes, replies side by side disagree by more than the policy's losses; this does not
depend on them.
"""

from __future__ import annotations

import statistics
import sys

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord
from specula_tools.lab.pair_args import open_pair, pair_parser


def _loss(steps: list[StepRecord], plain_step: float) -> float:
    return sum(x.step_s - x.emitted * plain_step for x in steps)


def main() -> int:
    ap = pair_parser(__doc__, prompts_file="docs/lab/peer-prompts-six.jsonl")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    eng = open_pair(a, calibrate=True)
    gen = eng.generator
    assert gen is not None
    spec = SpecConfig(mode=Mode.ADAPTIVE)
    policy = AdaptivePolicy(spec)
    params = SamplingParams(temperature=0.0, max_tokens=a.max_tokens)
    try:
        for r in range(a.repeat):
            for p in load_prompts(a.prompts_file):
                stops = policy.stop_loss.stops
                events = list(gen.generate(eng.tokenize_chat(p.messages), params, spec, policy))
                done = events[-1]
                assert isinstance(done, Done)
                recs = [e.record for e in events if isinstance(e, StepEvent)]
                plain = statistics.median(x.step_s for x in recs if not x.drafted)
                lookup = [x for x in recs if x.drafted and x.source == "lookup"]
                model = [x for x in recs if x.drafted and x.source != "lookup"]
                outside = done.stats.draft_catchup_s - sum(x.catchup_s for x in recs)
                tokens_s = plain * sum(x.emitted for x in recs)
                lost = _loss(lookup, plain) + _loss(model, plain) + outside
                print(f"{r} {p.id:20} tokens {done.stats.tokens:3}  plain step {plain * 1e3:4.0f} ms  "
                      f"lookup {len(lookup):2} steps {_loss(lookup, plain):+.2f} s  "
                      f"draft model {len(model):2} steps {_loss(model, plain):+.2f} s  "
                      f"catch-up outside steps {outside:.2f} s  => {tokens_s / (tokens_s + lost):.3f}x of plain  "
                      f"paused after: {policy.paused}  stop-loss: {policy.stop_loss.stops - stops}", flush=True)
    finally:
        eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
