"""Running the benchmark: every prompt in every mode in ONE process.

The runs share the loaded models, modes alternating (their order rotates
from prompt to prompt), after a warm-up. Speed is judged by ratios within the run, never by absolute times
across runs. Greedy runs are checked token for token against plain; a
divergence is reported with the plain run's top-2 logit gap at that position
(batch shape changes llama.cpp's numerics slightly, so near-ties can flip).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from specula.core.bench.prompts import BenchPrompt
from specula.core.bench.results import BenchReport, RunResult, _median, _quantile, oracle, summarize
from specula.core.chat.template import ChatTemplate, TemplateError
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.sampling.rules import Rule, SamplingParams
from specula.core.structured import forced_call_grammar, response_format_grammar


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
            raise ValueError("the target's chat template has no tool-call format, so a forced "
                             "tool call cannot be built")
        name = choice["function"]["name"] if isinstance(choice, dict) else None
        grammar, root = forced_call_grammar(fmt, prompt.tools, name)
    tools = prompt.tools if choice != "none" else None
    tokens = template.tokenize(model, messages, tools)
    return tokens, replace(params, grammar=grammar, grammar_root=root)


def skip_reason(engine: Engine, prompt: BenchPrompt, params: SamplingParams) -> str | None:
    """Why the target cannot run ``prompt`` (its chat template refuses the messages, or
    has no tool-call format for a forced call), or None: the benchmark leaves such a
    prompt out with a note rather than stopping on it."""
    try:
        if prompt.response_format or prompt.tools:
            _structured(engine, prompt, prompt.messages, params)
        else:
            engine.tokenize_chat(prompt.messages)
    except (ValueError, TemplateError) as exc:
        return str(exc)
    return None


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
    runnable = []
    for prompt in prompts:
        why = skip_reason(engine, prompt, params)
        if why is None:
            runnable.append(prompt)
        else:
            report.skipped.append(f"{prompt.id}: skipped: {why}")
    if not runnable:
        return report
    prompts = runnable
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


def _result(prompt: BenchPrompt, m: BenchMode, repeat: int, done: Done,
            shares: Sequence[float] = ()) -> RunResult:
    s = done.stats
    return RunResult(
        prompt_id=prompt.id, category=prompt.category, mode=m.label, repeat=repeat,
        prompt_token_ids=done.prompt_token_ids, token_ids=done.token_ids, text=done.text,
        tok_per_s=s.tokens_per_s, ttft_s=s.ttft_s, drafted=s.drafted, accepted=s.accepted,
        steps=s.steps, acceptance=s.acceptance_rate, mean_accepted_per_step=s.mean_accepted_per_step,
        overhead_fraction=s.overhead_fraction, peak_rss_bytes=s.peak_rss_bytes,
        stop_reason=done.stop_reason.value, total_s=s.total_s,
        draft_catchup_s=s.draft_catchup_s, draft_catchup_tokens=s.draft_catchup_tokens,
        host_share=s.host_share, host_share_step_median=_median(list(shares)),
        host_share_step_p90=_quantile(shares, 0.9),
        draft_host_share=s.draft_host_s / s.step_s if s.step_s > 0 else 0.0,
        host_us_per_step=1e6 * s.overhead_s / s.steps if s.steps else 0.0,
        step_us=1e6 * s.step_s / s.steps if s.steps else 0.0,
        memory=s.memory, checkpoint_bytes=s.checkpoint_bytes_each, checkpoints=s.checkpoints,
        checkpoint_s=s.checkpoint_s + s.draft_checkpoint_s, replayed_tokens=s.replayed_tokens,
        replay_s=s.replay_s, draft_replayed_tokens=s.draft_replayed_tokens,
        drafting_steps=s.drafting_steps, drafted_per_pos=list(s.drafted_per_pos),
        accepted_per_pos=list(s.accepted_per_pos),
    )


def _divergence(plain: list[int], other: list[int], gaps: list[float] | None) -> dict[str, object]:
    j = next((i for i, (a, b) in enumerate(zip(plain, other, strict=False)) if a != b), min(len(plain), len(other)))
    gap = gaps[j] if gaps is not None and j < len(gaps) else None
    return {"index": j, "plain_token": plain[j] if j < len(plain) else None,
            "token": other[j] if j < len(other) else None, "plain_top2_gap": gap}
