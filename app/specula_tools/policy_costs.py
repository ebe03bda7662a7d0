"""What the adaptive policy and prompt lookup cost on the host, per step.

1. Prompt lookup's match in a growing chat: the reply's prompt of N tokens (a new list,
   as each reply's is), then 2 tokens appended a step to the same list, as the
   generator's committed tokens grow: the first call and the per-step median.
2. The n-gram cache's 8-token preview along text it has right (plain steps, and lookup
   steps of 3 accepted + 1), and where nothing matches.
3. Microseconds per call of ``AdaptivePolicy.plan`` / ``observe`` and the lookup preview
   in real adaptive replies on the 152k-vocabulary proxy (calibrated at load, as the app).

    python -m specula_tools.policy_costs [PROXY_FOLDER]

Only public methods are timed, so the file can be run against an older checkout too
(``PYTHONPATH=<checkout>/app python app/specula_tools/policy_costs.py``).
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.lookup import LookupDrafter
from specula.core.engine.drafters.ngram_cache import NgramCache
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.sampling import rules as sampling
from specula_tools.cli import folder_argument
from specula_tools.host_profile import PROMPT
from specula_tools.vocab_proxy import DEFAULT_FOLDER, build_proxy


def _chat(n: int, rng: np.random.Generator) -> list[int]:
    """Code-like tokens: lines drawn from a few hundred (repeats), mixed with fresh text."""
    lines = [list(rng.zipf(1.3, int(rng.integers(5, 15))) % 50_000) for _ in range(200)]
    out: list[int] = []
    while len(out) < n:
        if rng.random() < 0.5:
            out += lines[int(rng.integers(0, len(lines)))]
        else:
            out += list(rng.zipf(1.3, 10) % 50_000)
    return [int(t) for t in out[:n]]


def lookup_in_a_growing_chat() -> None:
    print("prompt lookup per step in a growing chat (us; 2 tokens appended a step)")
    rng = np.random.default_rng(0)
    for n in (300, 2000, 8000):
        tokens = _chat(n + 400, rng)
        drafter = LookupDrafter()
        committed = tokens[:n]
        t0 = time.perf_counter()
        drafter.context_match(committed, 8)
        first = time.perf_counter() - t0
        per: list[float] = []
        for i in range(200):
            committed.extend(tokens[n + 2 * i:n + 2 * i + 2])
            t0 = time.perf_counter()
            drafter.context_match(committed, 8)
            per.append(time.perf_counter() - t0)
        print(f"  chat of {n:>4} tokens: first call {first * 1e3:5.1f} ms, per step median "
              f"{statistics.median(per) * 1e6:6.0f}, p90 {float(np.percentile(per, 90)) * 1e6:6.0f}")


def cache_preview() -> None:
    print("the n-gram cache's 8-token preview (us, median of 300)")
    rng = np.random.default_rng(1)
    text = [int(t) for t in rng.integers(0, 50_000, 3000)]
    cache = NgramCache()
    cache.learn(text)
    cache.learn(text)
    for step_by, label in ((1, "plain steps, the cache right"), (4, "lookup steps, 3 accepted + 1")):
        committed, per = text[:100], []
        for i in range(300):
            t0 = time.perf_counter()
            cache.predict(committed, 8)
            per.append(time.perf_counter() - t0)
            committed = text[:100 + (i + 1) * step_by]
        print(f"  {label:<30} {statistics.median(per) * 1e6:6.1f}")
    wrong = [int(t) for t in rng.integers(0, 50_000, 400)]
    per = []
    for i in range(300):
        ctx = text[:100] + wrong[:i + 1]
        t0 = time.perf_counter()
        cache.predict(ctx, 8)
        per.append(time.perf_counter() - t0)
    print(f"  {'no match':<30} {statistics.median(per) * 1e6:6.1f}")


def adaptive_replies(folder: str) -> None:
    spent: dict[str, list[float]] = defaultdict(list)

    def timed(owner: Any, name: str) -> Callable[[], None]:
        fn = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name].append(time.perf_counter() - t0)

        setattr(owner, name, wrapper)
        return lambda: setattr(owner, name, fn)

    target, draft = build_proxy(folder)
    engine = Engine(EngineOptions(n_threads=1, calibrate=True, n_ctx=2048))
    engine.load_target(target)
    engine.load_draft(draft)
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=8)
    params = sampling.SamplingParams(temperature=0.0, seed=7, max_tokens=256)
    for _ev in engine.chat(PROMPT, sampling.SamplingParams(max_tokens=8), spec):
        pass
    undo = [timed(AdaptivePolicy, n) for n in ("plan", "observe")]
    undo.append(timed(LookupDrafter, "preview"))
    steps = 0
    for _ in range(3):
        engine.generator.reset()  # type: ignore[union-attr]
        for ev in engine.chat(PROMPT, params, spec):
            if isinstance(ev, Done):
                steps += ev.stats.steps
    for u in undo:
        u()
    engine.close()
    print(f"adaptive replies on the proxy ({steps} steps): us per call, median, and per step")
    for name, v in spent.items():
        print(f"  {name:<10} {statistics.median(v) * 1e6:7.1f} {sum(v) / max(steps, 1) * 1e6:7.1f}")


def main(argv: list[str] | None = None) -> None:
    folder = folder_argument(__doc__, str(DEFAULT_FOLDER), "the proxy folder", argv)
    lookup_in_a_growing_chat()
    cache_preview()
    adaptive_replies(folder or str(DEFAULT_FOLDER))


if __name__ == "__main__":
    main()
