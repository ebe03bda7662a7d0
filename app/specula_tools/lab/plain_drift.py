"""How much a plain step's time drifts between replies on this machine: plain and adaptive
replies alternate on one engine, and each reply's median one-token target decode is printed.

    SPECULA_HOME=$(mktemp -d) SPECULA_CPU_EXTRA_BUFFERS=0 flock /work/core1.lock taskset -c 1 \\
        env PYTHONPATH=app:. python -m specula_tools.lab.plain_drift --target T.gguf --draft D.gguf

On the compute-bound pair adaptive mostly decodes plain, so the ratio of two replies side by
side is mostly this drift; ``reply_losses.py`` judges a reply against its own plain steps.
"""

from __future__ import annotations

import statistics

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula_tools.adaptive_trace import greedy_reply
from specula_tools.lab.pair_args import open_pair, pair_parser


def main() -> int:
    ap = pair_parser(__doc__, prompts_file="docs/lab/peer-prompts-six.jsonl")
    ap.add_argument("--prompt", default="unseen-csv-stats")
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    eng = open_pair(a, calibrate=True)
    messages = {p.id: p for p in load_prompts(a.prompts_file)}[a.prompt].messages
    sides = (("plain", SpecConfig(mode=Mode.PLAIN)), ("adaptive", SpecConfig(mode=Mode.ADAPTIVE, draft_max=3)))
    for _, spec in sides:  # warm-up
        greedy_reply(eng, [{"role": "user", "content": "hi"}], spec, 8)
    for i in range(a.pairs):
        for label, spec in sides:
            done, recs = greedy_reply(eng, messages, spec, a.max_tokens)
            one = [r.verify_s for r in recs if r.drafted == 0]
            host = [r.overhead_s for r in recs if r.drafted == 0]
            print(f"{i} {label:8} {done.stats.tokens_per_s:.2f} tok/s  plain steps {len(one)} median decode "
                  f"{1000 * statistics.median(one):.1f} ms  host {1000 * statistics.median(host):.2f} ms  "
                  f"total {done.stats.total_s:.2f}", flush=True)
    eng.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
