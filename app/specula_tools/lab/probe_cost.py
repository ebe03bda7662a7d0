"""What one probe of the draft costs in a long chat, with and without the probe window.

    SPECULA_CPU_EXTRA_BUFFERS=0 flock /work/core1.lock taskset -c 1 env PYTHONPATH=app \\
        python -m specula_tools.lab.probe_cost --target T.gguf --draft D.gguf \\
        --prompts-file docs/lab/data/2026-12-03-probe-window/long-chats.jsonl --repeat 2 --threads 1

Every adaptive reply here is a probe: a new policy (no saved costs) syncs the draft at
prefill and drafts three probe steps, as a paused draft's probe does, with a draft that
holds nothing of the conversation. ``window`` is the policy as it is (the draft reads
the chat's first tokens and the prompt's last ``PROBE_WINDOW``); ``whole`` the same with
``PROBE_WINDOW = None`` (the draft is fed the whole prompt). Per reply: decode tok/s and
its ratio to plain decoding's on the same prompt in the same repeat, the draft's catch-up
(tokens, seconds), drafted and accepted tokens, and whether the text is plain's. The
target keeps its cache of the prompt between the sides (TTFT is not compared); the draft's
is emptied before each reply.
"""

from __future__ import annotations

import statistics
import sys

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done
from specula.core.engine.policy import probe_cadence
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.lab.pair_args import open_pair, pair_parser

SIDES = ("plain", "window", "whole")


def reply(eng: Engine, prompt: list[int], side: str, max_tokens: int) -> Done:
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    gen.draft_model.reset()
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    if side == "plain":
        spec = SpecConfig(mode=Mode.PLAIN)
        policy = eng.policy_for(spec)
    else:
        spec = SpecConfig(mode=Mode.ADAPTIVE)
        policy = AdaptivePolicy(spec)
    window = probe_cadence.PROBE_WINDOW
    if side == "whole":
        probe_cadence.PROBE_WINDOW = None  # type: ignore[assignment]
    try:
        events = list(gen.generate(prompt, params, spec, policy))
    finally:
        probe_cadence.PROBE_WINDOW = window
    done = events[-1]
    assert isinstance(done, Done)
    return done


def main() -> int:
    ap = pair_parser(__doc__)
    ap.add_argument("--categories", default="multi-turn-edit,long-chat")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    eng = open_pair(a, calibrate=False)
    prompts = [p for p in load_prompts(a.prompts_file) if p.category in a.categories.split(",")]
    print(f"PROBE_WINDOW {probe_cadence.PROBE_WINDOW}; {len(prompts)} prompts x {a.repeat}, "
          f"max {a.max_tokens} tokens, greedy, {a.threads} thread(s)")
    ratios: dict[str, list[float]] = {"window": [], "whole": []}
    try:
        for r in range(a.repeat):
            for p in prompts:
                prompt = eng.tokenize_chat(p.messages)
                order = SIDES[r % 3:] + SIDES[: r % 3]
                got = {side: reply(eng, prompt, side, a.max_tokens) for side in order}
                base = got["plain"].stats
                plain_rate = (base.tokens - 1) / base.decode_s
                for side in SIDES:
                    s = got[side].stats
                    rate = (s.tokens - 1) / s.decode_s
                    same = got[side].token_ids == got["plain"].token_ids
                    if side != "plain":
                        ratios[side].append(rate / plain_rate)
                    print(f"{r} {p.id:22} {len(prompt):4} tok  {side:6} {rate:5.2f} tok/s "
                          f"{rate / plain_rate:5.2f}x  catch-up {s.draft_catchup_tokens:4} tok "
                          f"{s.draft_catchup_s:5.2f} s  drafted {s.drafted:3} accepted {s.accepted:3}"
                          f"  {'same' if same else 'DIFFERENT'}", flush=True)
    finally:
        eng.close()
    for side, xs in ratios.items():
        if xs:
            print(f"{side}: median {statistics.median(xs):.2f}x of plain, min {min(xs):.2f}x, "
                  f"max {max(xs):.2f}x over {len(xs)} replies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
