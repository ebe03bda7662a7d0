"""Modes side by side in one process, step by step: where one mode's time goes against another's.

    SPECULA_HOME=$(mktemp -d) SPECULA_CPU_EXTRA_BUFFERS=0 taskset -c 1 \\
        python -m specula_tools.mode_steps --target T.gguf --draft D.gguf \\
        --prompts-file docs/lab/peer-prompts-six.jsonl --prompts unseen-go-server,unseen-py-dataclass \\
        --modes adaptive,chain:5 --repeat 2 --threads 1 --steps

One engine answers every prompt in every mode in turn, as one server would (the adaptive
policy learns across the replies; each reply starts from empty caches, and the target's
n-gram cache learns nothing, as in ``peer_bench``). Per reply: tok/s, steps, drafted and
accepted tokens, the draft's decodes and time, the verify time, the host's time and the
draft's catch-up on the prompt; with ``--steps`` every step as
``source drafted/accepted d decodes : draft ms + verify ms + host ms``. Unlike
``peer_bench`` there is no HTTP between the engine and the client, so a difference that
shows only there is the server's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.ngram_store import NgramStore
from specula.core.engine.engine import Engine, EngineOptions
from specula_tools.adaptive_trace import greedy_reply


def _spec(mode: str) -> SpecConfig:
    name, _, k = mode.partition(":")
    spec = SpecConfig(mode=Mode(name))
    if k:
        spec.draft_max = int(k)
    return spec


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--prompts", required=True, help="prompt ids, comma-separated")
    ap.add_argument("--prompts-file", help="JSONL prompts (default: the packaged suite)")
    ap.add_argument("--modes", default="adaptive,chain:5")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", action="store_true", help="print every step")
    a = ap.parse_args(argv)
    NgramStore.learn_reply = lambda self, tokens: None  # type: ignore[method-assign]
    eng = Engine(EngineOptions(n_ctx=4096, n_threads=a.threads))
    eng.load_target(a.target)
    eng.load_draft(a.draft)
    suite = {p.id: p for p in load_prompts(a.prompts_file)}
    for r in range(a.repeat):
        for pid in a.prompts.split(","):
            for mode in a.modes.split(","):
                done, recs = greedy_reply(eng, suite[pid].messages, _spec(mode), a.max_tokens)
                s = done.stats
                print(f"{r} {pid:<20} {mode:<9} {s.tokens_per_s:6.2f} tok/s  steps {len(recs)}  "
                      f"drafted {sum(x.drafted for x in recs)}  accepted {sum(x.accepted for x in recs)}  "
                      f"draft {sum(x.draft_s for x in recs):.2f} s in {sum(x.draft_decodes for x in recs)} decodes  "
                      f"verify {sum(x.verify_s for x in recs):.2f} s  host {sum(x.overhead_s for x in recs):.2f} s  "
                      f"catch-up {s.draft_catchup_s:.2f} s / {s.draft_catchup_tokens} tokens", flush=True)
                if a.steps:
                    print("   ", " ".join(f"{x.source[:2]}{x.drafted}/{x.accepted}d{x.draft_decodes}:"
                                          f"{x.draft_s * 1e3:.0f}+{x.verify_s * 1e3:.0f}+{x.overhead_s * 1e3:.0f}"
                                          for x in recs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
