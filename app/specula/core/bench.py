"""The benchmark harness behind ``specula bench``.

Every prompt runs in every mode in ONE process on the same loaded models,
modes alternating (their order rotates from prompt to prompt), after a
warm-up. Speed is judged by ratios within the run, never by absolute times
across runs. Greedy runs are checked token for token against plain; a
divergence is reported with the plain run's top-2 logit gap at that position
(batch shape changes llama.cpp's numerics slightly, so near-ties can flip).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from specula.core.chat.template import ChatTemplate
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.sampling import Rule, SamplingParams
from specula.core.structured import forced_call_grammar, response_format_grammar


@dataclass
class BenchPrompt:
    id: str
    category: str
    prompt: str
    # A structured reply, as the OpenAI API asks for one: a JSON schema, or a tool call.
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    # Earlier messages of a multi-turn chat ({"role": "user" | "assistant" | "system",
    # "content": text}), sent before ``prompt``: the reply can repeat what they hold.
    turns: list[dict[str, str]] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.turns, {"role": "user", "content": self.prompt}]


def _turns(raw: object) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TypeError("'turns' must be a list of {role, content} messages")
    out = []
    for i, m in enumerate(raw, 1):
        if not (isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
                and isinstance(m.get("content"), str)):
            raise TypeError(f"turn {i} must be {{\"role\": system|user|assistant, \"content\": text}}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


@dataclass
class RunResult:
    prompt_id: str
    category: str
    mode: str
    repeat: int
    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    tok_per_s: float
    ttft_s: float
    drafted: int
    accepted: int
    steps: int
    acceptance: float
    mean_accepted_per_step: float
    overhead_fraction: float
    peak_rss_bytes: int
    stop_reason: str
    identical: bool | None = None  # greedy: same token ids as plain (None for plain itself)
    total_s: float = 0.0  # the whole reply, prefill and the draft's catch-up included
    divergence: dict[str, object] | None = None
    # Host share: the steps' time outside llama_decode (target and draft decodes are not
    # host work; the drafter's Python is), over the reply and per step (median, p90).
    host_share: float = 0.0
    host_share_step_median: float = 0.0
    host_share_step_p90: float = 0.0
    draft_host_share: float = 0.0  # of the steps' time: the drafter's own Python work
    draft_prefill_s: float = 0.0  # the draft's catch-up on the prompt (inside the decode time)


@dataclass
class BenchReport:
    runs: list[RunResult] = field(default_factory=list)
    summary: dict[str, object] = field(default_factory=dict)
    oracle: dict[str, object] = field(default_factory=dict)
    setup: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"setup": self.setup, "runs": [asdict(r) for r in self.runs], "summary": self.summary,
                "oracle": self.oracle}


def load_prompts(path: str | Path | None = None) -> list[BenchPrompt]:
    """JSONL lines ``{"id", "category", "prompt"}`` with optional ``"turns"`` (earlier
    messages of the chat), ``"response_format"`` or ``"tools"`` and ``"tool_choice"`` (a
    structured reply); the packaged suite by default."""
    if path is None:
        text = resources.files("specula.data").joinpath("prompts.jsonl").read_text("utf-8")
        name = "the default suite"
    else:
        text = Path(path).read_text("utf-8")
        name = str(path)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(BenchPrompt(str(d["id"]), str(d.get("category", "")), str(d["prompt"]),
                                   response_format=d.get("response_format"), tools=d.get("tools"),
                                   tool_choice=d.get("tool_choice"), turns=_turns(d.get("turns"))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{name}, line {n}: expected {{id, category, prompt[, turns]}} ({exc})") from exc
    return out


@dataclass(frozen=True)
class BenchMode:
    """One column of the benchmark: a label ("chain:3") and the settings it runs with."""

    label: str
    spec: SpecConfig

    @property
    def fixed_chain(self) -> bool:
        """A draft chain of fixed length: a candidate for the per-prompt best fixed shape."""
        return self.spec.mode is Mode.CHAIN


def parse_modes(text: str, draft_max: int, **extra: object) -> list[BenchMode]:
    """'plain,chain:1-6,adaptive' -> the benchmark's columns (plain always first, for the ratios).

    ``NAME`` runs with ``draft_max``; ``NAME:K`` with a draft length of K and
    ``NAME:A-B`` with every length from A to B (``chain:1-6`` is the oracle of
    fixed chains that adaptive is measured against). A plain ``adaptive`` may
    draft as far as the longest fixed chain listed: the oracle picks its best
    from those lengths, so adaptive chooses among the same ones.
    """
    modes: list[BenchMode] = []
    for item in [m.strip() for m in text.split(",") if m.strip()]:
        name, _, lengths = item.partition(":")
        try:
            mode = Mode(name)
        except ValueError:
            raise ValueError(f"unknown mode {name!r}; choose from {', '.join(m.value for m in Mode)}") from None
        if mode is Mode.PLAIN and lengths:
            raise ValueError(f"{item!r}: plain drafts nothing, so it takes no draft length")
        if not lengths:
            ks, labels = [draft_max], [name]
        else:
            ks = _lengths(item, lengths)
            labels = [f"{name}:{k}" for k in ks]
        for k, label in zip(ks, labels, strict=True):
            if any(m.label == label for m in modes):
                raise ValueError(f"mode {label!r} is listed twice")
            spec = SpecConfig(mode=mode, draft_max=k, **extra)  # type: ignore[arg-type]
            modes.append(BenchMode(label, spec))
    longest = max((m.spec.draft_max for m in modes if m.fixed_chain), default=0)
    modes = [BenchMode(m.label, replace(m.spec, draft_max=longest))
             if m.label == Mode.ADAPTIVE.value and longest > m.spec.draft_max else m for m in modes]
    if not any(m.spec.mode is Mode.PLAIN for m in modes):
        modes.insert(0, BenchMode(Mode.PLAIN.value, SpecConfig(mode=Mode.PLAIN)))
    return modes


def _lengths(item: str, text: str) -> list[int]:
    lo, sep, hi = text.partition("-")
    try:
        a = int(lo)
        b = int(hi) if sep else a
    except ValueError:
        raise ValueError(f"{item!r}: expected NAME:K or NAME:A-B with whole numbers") from None
    if not 1 <= a <= b <= 16:
        raise ValueError(f"{item!r}: draft lengths must satisfy 1 <= A <= B <= 16")
    return list(range(a, b + 1))


def _run_one(engine: Engine, prompt: BenchPrompt, params: SamplingParams, spec: SpecConfig,
             gaps: list[float] | None) -> tuple[Done, list[float] | None, list[float]]:
    """(the reply, plain's top-2 gaps when asked, every step's host share)."""
    gen = engine.generator
    assert gen is not None
    gen.gaps = gaps
    done = None
    shares: list[float] = []
    messages = prompt.messages
    try:
        if prompt.response_format or prompt.tools:
            tokens, params = _structured(engine, prompt, messages, params)
            events = engine.generate_tokens(tokens, params, spec)
        else:
            events = engine.chat(messages, params, spec)
        for ev in events:
            if isinstance(ev, StepEvent):
                shares.append(ev.record.host_share)
            elif isinstance(ev, Done):
                done = ev
    finally:
        gen.gaps = None
    assert done is not None
    return done, gaps, shares


def _structured(engine: Engine, prompt: BenchPrompt, messages: list[dict[str, str]],
                params: SamplingParams) -> tuple[list[int], SamplingParams]:
    """The prompt's tokens (its tools shown to the template) and the grammar its reply
    keeps to, as ``specula serve`` builds them for the same request."""
    model = engine.target_model
    assert model is not None
    template = ChatTemplate.for_model(model)
    grammar, root = response_format_grammar(prompt.response_format), "root"
    choice = prompt.tool_choice
    if prompt.tools and choice not in (None, "auto", "none"):
        fmt = template.tool_format
        if fmt is None:
            raise ValueError(f"{prompt.id}: the target's chat template has no tool-call format")
        name = choice["function"]["name"] if isinstance(choice, dict) else None
        grammar, root = forced_call_grammar(fmt, prompt.tools, name)
    tools = prompt.tools if choice != "none" else None
    tokens = template.tokenize(model, messages, tools)
    return tokens, replace(params, grammar=grammar, grammar_root=root)


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else 0.0


def run_bench(
    engine: Engine,
    prompts: Sequence[BenchPrompt],
    modes: Sequence[BenchMode],
    params: SamplingParams,
    repeat: int = 1,
    on_run: Callable[[RunResult], None] | None = None,
    cold: bool = False,
    fresh: bool = True,
    learn_ngrams: bool = False,
) -> BenchReport:
    """Every prompt in every mode, modes rotated per prompt; ``cold`` skips the
    learning warm-up (only plain warms caches and threads), so the first reply of a
    policy that learns starts from nothing, as for a new pair. ``fresh``: every run
    starts from empty KV caches (a new chat), so TTFT is a whole prefill in every
    mode rather than whichever mode ran first on the prompt. ``learn_ngrams``: let the
    target's n-gram cache learn from the benchmark's replies as chats do; by default it
    is read as it was and learns nothing, or a mode would draft a reply another mode
    already wrote for the same prompt."""
    report = BenchReport()
    store = engine.ngrams
    learning = store.learning if store is not None else False
    if store is not None:
        store.learning = learn_ngrams
        report.setup["ngram_cache"] = {"learned_tokens": store.cache.learned, "slots_used": store.cache.used,
                                       "learning": learn_ngrams}
    try:
        _run_all(engine, prompts, modes, params, repeat, on_run, cold, fresh, report)
    finally:
        if store is not None:
            store.learning = learning
    return report


def _run_all(engine: Engine, prompts: Sequence[BenchPrompt], modes: Sequence[BenchMode],
             params: SamplingParams, repeat: int, on_run: Callable[[RunResult], None] | None,
             cold: bool, fresh: bool, report: BenchReport) -> None:
    # Warm-up: caches, threads and allocations settle before anything is timed.
    warm = SamplingParams(max_tokens=8)
    for m in modes:
        if cold and m.spec.mode is not Mode.PLAIN:
            continue
        _run_one(engine, prompts[0], warm, m.spec, None)
    for r in range(repeat):
        for i, prompt in enumerate(prompts):
            order = list(modes[(i + r) % len(modes):]) + list(modes[: (i + r) % len(modes)])
            results: dict[str, tuple[Done, list[float] | None, list[float]]] = {}
            for m in order:
                if fresh and engine.generator is not None:
                    engine.generator.reset()
                results[m.label] = _run_one(engine, prompt, params, m.spec, None)
            plain_done, _, _ = results[Mode.PLAIN.value]
            plain_gaps: list[float] | None = None
            for m in modes:
                done, _, shares = results[m.label]
                res = _result(prompt, m, r, done, shares)
                if m.spec.mode is not Mode.PLAIN and _same_text_expected(params):
                    res.identical = done.token_ids == plain_done.token_ids
                    if not res.identical:
                        if plain_gaps is None and params.greedy:
                            plain_gaps = _plain_gaps(engine, prompt, params, fresh)
                        res.divergence = _divergence(plain_done.token_ids, done.token_ids, plain_gaps)
                report.runs.append(res)
                if on_run:
                    on_run(res)
    report.summary = summarize(report.runs)
    report.oracle = oracle(report.runs, [m.label for m in modes if m.fixed_chain])


def _plain_gaps(engine: Engine, prompt: BenchPrompt, params: SamplingParams,
                fresh: bool) -> list[float]:
    """Plain greedy's top-2 logit gap at every token, from an untimed rerun (greedy plain
    is deterministic): reading them in the timed run would add two passes over the
    vocabulary per token to plain's host time."""
    if fresh and engine.generator is not None:
        engine.generator.reset()
    _, gaps, _ = _run_one(engine, prompt, params, SpecConfig(mode=Mode.PLAIN), [])
    return gaps or []


def _same_text_expected(params: SamplingParams) -> bool:
    """Greedy, or the coupled rule with one fixed seed: every mode must give plain's
    tokens (up to batch-shape near-ties), so the benchmark checks it."""
    if params.greedy:
        return True
    return params.rule is Rule.COUPLED and params.seed is not None and params.seed >= 0


def _quantile(xs: Sequence[float], q: float) -> float:
    if not xs:
        return 0.0
    v = sorted(xs)
    return float(v[min(len(v) - 1, int(q * len(v)))])


def _result(prompt: BenchPrompt, m: BenchMode, repeat: int, done: Done,
            shares: Sequence[float] = ()) -> RunResult:
    s = done.stats
    return RunResult(
        prompt_id=prompt.id, category=prompt.category, mode=m.label, repeat=repeat,
        prompt_token_ids=done.prompt_token_ids, token_ids=done.token_ids, text=done.text,
        tok_per_s=s.tokens_per_s, ttft_s=s.ttft_s, drafted=s.drafted, accepted=s.accepted,
        steps=s.steps, acceptance=s.acceptance_rate, mean_accepted_per_step=s.mean_accepted_per_step,
        overhead_fraction=s.overhead_fraction, peak_rss_bytes=s.peak_rss_bytes,
        stop_reason=done.stop_reason.value, total_s=s.total_s, draft_prefill_s=s.draft_prefill_s,
        host_share=s.host_share, host_share_step_median=_median(list(shares)),
        host_share_step_p90=_quantile(shares, 0.9),
        draft_host_share=s.draft_host_s / s.step_s if s.step_s > 0 else 0.0,
    )


def _divergence(plain: list[int], other: list[int], gaps: list[float] | None) -> dict[str, object]:
    j = next((i for i, (a, b) in enumerate(zip(plain, other, strict=False)) if a != b), min(len(plain), len(other)))
    gap = gaps[j] if gaps is not None and j < len(gaps) else None
    return {"index": j, "plain_token": plain[j] if j < len(plain) else None,
            "token": other[j] if j < len(other) else None, "plain_top2_gap": gap}


def _per_prompt_median(runs: Sequence[RunResult], key: Callable[[RunResult], float]) -> dict[tuple[str, str], float]:
    """(prompt, mode) -> the median over repeats: a per-prompt figure needs several runs here."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        groups.setdefault((r.prompt_id, r.mode), []).append(key(r))
    return {k: _median(v) for k, v in groups.items()}


def oracle(runs: Sequence[RunResult], fixed: Sequence[str]) -> dict[str, object]:
    """Per prompt: the best of the fixed chains (by median tok/s over repeats), and how every
    other mode compares with it. The best fixed length differs from prompt to prompt; an
    adaptive policy is judged against that per-prompt best, not against one global length."""
    if not fixed:
        return {}
    speed = _per_prompt_median(runs, lambda r: r.tok_per_s)
    prompts = list(dict.fromkeys(r.prompt_id for r in runs))
    modes = list(dict.fromkeys(r.mode for r in runs))
    best: dict[str, dict[str, object]] = {}
    ratios: dict[str, dict[str, float]] = {m: {} for m in modes}
    for pid in prompts:
        cands = [(speed[(pid, f)], f) for f in fixed if (pid, f) in speed]
        if not cands:
            continue
        top, label = max(cands)
        best[pid] = {"mode": label, "tok_per_s": top}
        for m in modes:
            if (pid, m) in speed and top > 0:
                ratios[m][pid] = speed[(pid, m)] / top
    return {
        "best_fixed": best,
        "vs_best_fixed": {
            m: {"median": _median(list(v.values())), "min": min(v.values()), "per_prompt": v}
            for m, v in ratios.items() if v
        },
    }


def summarize(runs: Sequence[RunResult]) -> dict[str, object]:
    """Per mode: speedup vs plain (median, min, max over prompt x repeat; the least per-prompt
    median over repeats), per category, TTFT against plain's."""
    plain = {(r.prompt_id, r.repeat): r for r in runs if r.mode == Mode.PLAIN.value}
    modes = list(dict.fromkeys(r.mode for r in runs))
    plain_ttft = _median([r.ttft_s for r in plain.values()])
    per_prompt = _per_prompt_median(runs, lambda r: r.tok_per_s)
    out: dict[str, object] = {}
    for mode in modes:
        rs = [r for r in runs if r.mode == mode]
        ratios = [r.tok_per_s / plain[(r.prompt_id, r.repeat)].tok_per_s
                  for r in rs if plain.get((r.prompt_id, r.repeat)) and plain[(r.prompt_id, r.repeat)].tok_per_s > 0]
        cats: dict[str, list[float]] = {}
        for r in rs:
            p = plain.get((r.prompt_id, r.repeat))
            if p and p.tok_per_s > 0:
                cats.setdefault(r.category, []).append(r.tok_per_s / p.tok_per_s)
        # Per prompt, medians over repeats first: the figure a per-prompt claim rests on.
        prompt_ratios = [per_prompt[(pid, mode)] / per_prompt[(pid, "plain")]
                         for pid in dict.fromkeys(r.prompt_id for r in rs)
                         if per_prompt.get((pid, "plain"))]
        drafted = sum(r.drafted for r in rs)
        ident = [r.identical for r in rs if r.identical is not None]
        ttft = _median([r.ttft_s for r in rs])
        # whole-reply time against plain's, same prompt and repeat (a draft's catch-up counts)
        totals = [r.total_s / plain[(r.prompt_id, r.repeat)].total_s for r in rs
                  if plain.get((r.prompt_id, r.repeat)) and plain[(r.prompt_id, r.repeat)].total_s > 0]
        out[mode] = {
            "runs": len(rs),
            "tok_per_s_median": _median([r.tok_per_s for r in rs]),
            "speedup_median": _median(ratios),
            "speedup_min": min(ratios) if ratios else 0.0,
            "speedup_max": max(ratios) if ratios else 0.0,
            "prompt_speedup_min": min(prompt_ratios) if prompt_ratios else 0.0,
            "speedup_by_category": {c: _median(v) for c, v in sorted(cats.items())},
            "ttft_s_median": ttft,
            "ttft_vs_plain": ttft / plain_ttft if plain_ttft > 0 else 0.0,
            "total_s_median": _median([r.total_s for r in rs]),
            "total_vs_plain": _median(totals),
            "acceptance": sum(r.accepted for r in rs) / drafted if drafted else 0.0,
            "mean_accepted_per_step": _median([r.mean_accepted_per_step for r in rs]),
            "overhead_fraction_median": _median([r.overhead_fraction for r in rs]),
            "host_share_median": _median([r.host_share for r in rs]),
            "host_share_step_median": _median([r.host_share_step_median for r in rs]),
            "host_share_step_p90": _median([r.host_share_step_p90 for r in rs]),
            "draft_host_share_median": _median([r.draft_host_share for r in rs]),
            "peak_rss_mb": max((r.peak_rss_bytes for r in rs), default=0) / 2**20,
            "identical": f"{sum(ident)}/{len(ident)}" if ident else "-",
        }
    return out


def format_report(report: BenchReport) -> str:
    lines: list[str] = []
    by_prompt: dict[str, list[RunResult]] = {}
    for r in report.runs:
        by_prompt.setdefault(f"{r.prompt_id} (repeat {r.repeat})", []).append(r)
    hdr = f"  {'mode':<10}{'tok/s':>8}{'speedup':>9}{'TTFT s':>8}{'accept':>8}{'per step':>9}{'host %':>7}  identical"
    for key, rs in by_prompt.items():
        plain = next((r for r in rs if r.mode == "plain"), None)
        lines.append(f"{key}  [{rs[0].category}]")
        lines.append(hdr)
        for r in rs:
            sp = r.tok_per_s / plain.tok_per_s if plain and plain.tok_per_s else 0.0
            ident = "-" if r.identical is None else ("yes" if r.identical else _div_text(r))
            lines.append(
                f"  {r.mode:<10}{r.tok_per_s:>8.1f}{sp:>8.2f}x{r.ttft_s:>8.2f}"
                f"{r.acceptance:>8.0%}{r.mean_accepted_per_step:>9.2f}{100 * r.host_share:>7.1f}  {ident}"
            )
    lines.append("")
    lines.append("Summary (speedup = tok/s over plain's in the same run; median [min-max])")
    lines.append(f"  {'mode':<10}{'tok/s':>8}{'speedup':>22}{'TTFT s':>8}{'xplain':>7}{'accept':>8}{'per step':>9}{'host %':>7}{'RSS MB':>8}{'total':>7}  identical")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        rng = f"{s['speedup_median']:.2f}x [{s['speedup_min']:.2f}-{s['speedup_max']:.2f}]"
        lines.append(
            f"  {mode:<10}{s['tok_per_s_median']:>8.1f}{rng:>22}{s['ttft_s_median']:>8.2f}{s['ttft_vs_plain']:>6.2f}x"
            f"{s['acceptance']:>8.0%}{s['mean_accepted_per_step']:>9.2f}"
            f"{100 * s['host_share_median']:>7.1f}{s['peak_rss_mb']:>8.0f}"
            f"{s['total_vs_plain']:>6.2f}x  {s['identical']}"
        )
    lines.append("")
    lines.append("Host share (time outside llama_decode; the drafter's Python included), median")
    lines.append(f"  {'mode':<10}{'reply %':>9}{'step %':>8}{'step p90 %':>12}{'drafter %':>11}")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        lines.append(
            f"  {mode:<10}{100 * s['host_share_median']:>9.1f}{100 * s['host_share_step_median']:>8.1f}"
            f"{100 * s['host_share_step_p90']:>12.1f}{100 * s['draft_host_share_median']:>11.1f}"
        )
    lines.append("")
    lines.append("Speedup by category (median)")
    for mode, s in report.summary.items():
        assert isinstance(s, dict)
        cats = s["speedup_by_category"]
        assert isinstance(cats, dict)
        lines.append(f"  {mode:<10}" + "  ".join(f"{c} {v:.2f}x" for c, v in cats.items()))
    lines.extend(_format_oracle(report.oracle))
    return "\n".join(lines)


def _format_oracle(orc: dict[str, object]) -> list[str]:
    if not orc:
        return []
    best = orc["best_fixed"]
    vs = orc["vs_best_fixed"]
    assert isinstance(best, dict) and isinstance(vs, dict)
    lines = ["", "Against the best fixed chain per prompt (median tok/s over repeats)"]
    modes = [m for m in vs if not str(m).startswith("chain")]
    lines.append(f"  {'prompt':<22}{'best fixed':>12}{'tok/s':>8}" + "".join(f"{m:>11}" for m in modes))
    for pid, b in best.items():
        cells = "".join(f"{vs[m]['per_prompt'].get(pid, 0.0):>10.2f}x" for m in modes)
        lines.append(f"  {pid:<22}{b['mode']:>12}{b['tok_per_s']:>8.1f}{cells}")
    lines.append("  " + "  ".join(f"{m}: median {vs[m]['median']:.2f}x, min {vs[m]['min']:.2f}x" for m in modes))
    return lines


def _div_text(r: RunResult) -> str:
    d = r.divergence or {}
    gap = d.get("plain_top2_gap")
    gap_s = f"{gap:.3f}" if isinstance(gap, float) else "?"
    return f"no: from token {d.get('index')} (plain top-2 gap {gap_s})"
