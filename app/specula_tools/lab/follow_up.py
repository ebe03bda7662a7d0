"""The reply after a probe in a long chat: what the draft is fed, and what it costs.

    SPECULA_CPU_EXTRA_BUFFERS=0 flock /work/core1.lock taskset -c 1 env PYTHONPATH=app \\
        python -m specula_tools.lab.follow_up --target T.gguf --draft D.gguf \\
        --prompts-file docs/lab/data/2026-12-03-probe-window/long-chats.jsonl --threads 1

Each chat is answered twice in a row: the first reply as in ``probe_cost.py`` (a new
adaptive policy, a draft that holds nothing, so the reply probes it on a window of the
chat), then a follow-up turn (the first reply and FOLLOW_UP appended) with the same
policy and draft, as a user's next message would be (``--follow-up``). Plain decoding answers the same two
turns. Per reply: decode tok/s and its ratio to plain's, the draft's catch-up (tokens,
seconds), drafted and accepted tokens, and whether the text is plain's.
"""

from __future__ import annotations

import sys

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import DraftPolicy
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.lab.pair_args import open_pair, pair_parser

FOLLOW_UP = "Thanks. Now write a short test for it with pytest."


def answer(eng: Engine, prompt: list[int], spec: SpecConfig, policy: DraftPolicy, max_tokens: int) -> Done:
    gen = eng.generator
    assert gen is not None
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    done = list(gen.generate(prompt, params, spec, policy))[-1]
    assert isinstance(done, Done)
    return done


def main() -> int:
    ap = pair_parser(__doc__)
    ap.add_argument("--categories", default="multi-turn-edit,long-chat")
    ap.add_argument("--follow-up", default=FOLLOW_UP, help="the second user turn")
    ap.add_argument("--only", default="", help="comma-separated prompt ids (default: every chat)")
    a = ap.parse_args()
    eng = open_pair(a, calibrate=False)
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    prompts = [p for p in load_prompts(a.prompts_file) if p.category in a.categories.split(",")
               and (not a.only or p.id in a.only.split(","))]
    print(f"{len(prompts)} chats, two replies each, max {a.max_tokens} tokens, greedy, "
          f"{a.threads} thread(s); follow-up: {a.follow_up!r}")
    try:
        for p in prompts:
            plain_spec = SpecConfig(mode=Mode.PLAIN)
            spec = SpecConfig(mode=Mode.ADAPTIVE)
            policy = AdaptivePolicy(spec)
            gen.draft_model.reset()
            messages = list(p.messages)
            for turn in (1, 2):
                prompt = eng.tokenize_chat(messages)
                base = answer(eng, prompt, plain_spec, eng.policy_for(plain_spec), a.max_tokens)
                got = answer(eng, prompt, spec, policy, a.max_tokens)
                plain_rate = (base.stats.tokens - 1) / base.stats.decode_s
                for side, done in (("plain", base), ("adaptive", got)):
                    s = done.stats
                    rate = (s.tokens - 1) / s.decode_s
                    same = done.token_ids == base.token_ids
                    print(f"{p.id:22} reply {turn} {len(prompt):4} tok  {side:8} {rate:5.2f} tok/s "
                          f"{rate / plain_rate:5.2f}x  catch-up {s.draft_catchup_tokens:4} tok "
                          f"{s.draft_catchup_s:5.2f} s  drafted {s.drafted:3} accepted {s.accepted:3}"
                          f"  {'same' if same else 'DIFFERENT'}", flush=True)
                messages = [*messages, {"role": "assistant", "content": base.text},
                            {"role": "user", "content": a.follow_up}]
    finally:
        eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
