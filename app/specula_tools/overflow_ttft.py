"""Time to first token around a truncation, and the lookup share of a document edit.

Run from the repository root (one thread, pinned, as docs/benchmarks.md asks)::

    flock /work/core1.lock taskset -c 1 env PYTHONPATH=app python -m specula_tools.overflow_ttft \\
        --target ~/.cache/specula-bench/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --draft ~/.cache/specula-bench/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --threads 1

Part 1 drives one engine through a conversation that outgrows a small context
(``--ctx``) under each overflow policy, with the chat's fitting
(:func:`specula.core.chat.overflow.fit`, sticky in steps) and prints, per
turn, the prompt tokens, the tokens the prefill had to evaluate (the rest came
from the KV cache's longest common prefix) and the TTFT; then the same
prompt as the turn after the truncation on a cold cache (a fresh prompt).

Part 2 attaches a source file (``core/chat/attachments.py``) to an edit request, as the chat
does, and replies under prompt lookup and under the adaptive chain; it prints
how many of the reply's tokens came from prompt lookup, from the draft model
and from the target.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from specula.core.chat.attachments import read_attachment, with_attachments
from specula.core.chat.overflow import OverflowPolicy, fit, prompt_budget
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, TokenEvent
from specula.core.engine.sampling.rules import SamplingParams

SYSTEM = ("You are a careful programming assistant. Answer with short, correct code and one "
          "sentence of explanation. Prefer the standard library; name things clearly.")
TOPICS = ["parse a CSV line with quoted fields", "merge two sorted lists",
          "a least-recently-used cache class", "binary search over a sorted list",
          "count the words in a text file", "flatten a nested list",
          "check balanced brackets in a string", "a retry decorator with back-off",
          "read a JSON config with defaults", "the n-th Fibonacci number iteratively"]


def reply(engine: Engine, messages: list[dict[str, str]], max_tokens: int,
          mode: Mode = Mode.PLAIN) -> tuple[Done, Counter[str]]:
    sampling = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    sources: Counter[str] = Counter()
    done: Done | None = None
    for ev in engine.chat(messages, sampling, SpecConfig(mode=mode)):
        if isinstance(ev, TokenEvent):
            sources[ev.source.value] += 1
        elif isinstance(ev, Done):
            done = ev
    assert done is not None
    return done, sources


def overflow_run(engine: Engine, policy: OverflowPolicy, turns: int, max_tokens: int) -> None:
    budget = prompt_budget(engine.n_ctx, max_tokens)
    print(f"\n## {policy.label} (context {engine.n_ctx}, prompt budget {budget})")
    print("turn | sent msgs | left out | prompt tok | prefilled | TTFT s")
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    keep_out = 0
    last_fitted: list[dict[str, str]] = []
    for i in range(turns):
        history.append({"role": "user", "content": f"Write Python: {TOPICS[i % len(TOPICS)]}."})
        fitted = fit(history, policy, budget, lambda m: len(engine.tokenize_chat(m)),
                     keep_out=keep_out)
        mark = " <- truncation" if fitted.left_out > keep_out else ""
        keep_out = fitted.left_out
        done, _src = reply(engine, fitted.messages, max_tokens)
        s = done.stats
        print(f"{i + 1:4d} | {len(fitted.messages):9d} | {fitted.left_out:8d} | "
              f"{s.prompt_tokens:10d} | {s.prefill_tokens:9d} | {s.ttft_s:6.3f}{mark}")
        history.append({"role": "assistant", "content": done.text})
        last_fitted = fitted.messages
    # The last turn's prompt again, on a cache that holds something else: a fresh prompt.
    reply(engine, [{"role": "user", "content": "Say hello."}], 2)
    done, _src = reply(engine, last_fitted, max_tokens)
    s = done.stats
    print(f"fresh| {len(last_fitted):9d} |        - | {s.prompt_tokens:10d} | "
          f"{s.prefill_tokens:9d} | {s.ttft_s:6.3f}  (the last turn's prompt, cold cache)")


DOC = Path(__file__).resolve().parents[1] / "core" / "chat" / "attachments.py"


def lookup_share(engine: Engine, max_tokens: int, doc_path: Path = DOC) -> None:
    doc = read_attachment(doc_path)
    ask = ("In the attached file, rename the function `read_attachment` to `load_attachment` "
           "everywhere. Reply with the whole file, changed only there.")
    messages = [{"role": "system", "content": "You edit the user's document. Reply with the "
                 "full revised text, changing only what was asked."},
                {"role": "user", "content": with_attachments(ask, [doc])}]
    print(f"\n## Document edit with an attached file ({doc.name}, "
          f"{len(engine.tokenize_chat(messages))} prompt tokens)")
    print("mode | tokens | from lookup | from draft | from target | tok/s | TTFT s")
    modes = [Mode.PLAIN, Mode.LOOKUP] + ([Mode.ADAPTIVE] if engine.has_draft else [])
    for mode in modes:
        done, src = reply(engine, messages, max_tokens, mode)
        s = done.stats
        n = max(s.tokens, 1)
        print(f"{mode.value} | {s.tokens} | {src['lookup']} ({src['lookup'] / n:.0%}) | "
              f"{src['draft']} ({src['draft'] / n:.0%}) | {src['target']} | "
              f"{s.tokens_per_s:.1f} | {s.ttft_s:.3f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True)
    p.add_argument("--draft")
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--turns", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--edit-tokens", type=int, default=400)
    p.add_argument("--skip-edit", action="store_true")
    p.add_argument("--skip-overflow", action="store_true")
    p.add_argument("--policies", default="truncate_middle,rolling_window",
                   help="overflow policies to run, comma-separated")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    engine = Engine(EngineOptions(n_ctx=a.ctx, n_threads=a.threads, calibrate=False))
    engine.load_target(a.target)
    print(f"# {Path(a.target).name}, {a.threads} thread(s), {engine.backend}")
    policies = [OverflowPolicy(p) for p in a.policies.split(",") if p]
    for policy in () if a.skip_overflow else policies:
        overflow_run(engine, policy, a.turns, a.max_tokens)
    if not a.skip_edit:
        edit = Engine(EngineOptions(n_ctx=4096, n_threads=a.threads, calibrate=False))
        edit.load_target(a.target)
        if a.draft:
            edit.load_draft(a.draft)
        engine.close()
        lookup_share(edit, a.edit_tokens)
        edit.close()
    else:
        engine.close()
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
