"""`specula bench`: plain vs speculative modes, every prompt, one process."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile

from specula.commands._common import fail, say
from specula.commands._engine_args import (
    add_sampling_args,
    check_mtp,
    engine_options,
    load_draft_or_head,
    sampling_params,
    target_name,
)
from specula.core.bench import RunResult, format_report, load_prompts, parse_modes, run_bench
from specula.core.engine.config import DEFAULT_DRAFT_MAX, Mode, mtp_refusal
from specula.core.engine.engine import Engine, LoadError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", required=True, help="target GGUF")
    p.add_argument("--draft", help="draft GGUF")
    p.add_argument("--prompts", help="JSONL {id, category, prompt[, turns]} (default: the packaged suite)")
    p.add_argument("--categories", help="only these categories (comma-separated)")
    p.add_argument("--limit", type=int, help="only the first N prompts")
    p.add_argument("--modes", default="plain,chain",
                   help="comma-separated: plain, chain, adaptive, tree, lookup, mtp; NAME:K sets the draft "
                        "length, NAME:A-B runs every length (chain:1-6 gives the per-prompt best fixed chain)")
    p.add_argument("--cold", action="store_true",
                   help="start from an empty policy state (a fresh temporary data folder, no learning "
                        "warm-up): the first reply of a new pair")
    p.add_argument("--reuse-prefix", action="store_true",
                   help="keep the KV caches between runs (a prompt's later modes reuse its prefill); "
                        "by default every run starts from empty caches, like a new chat")
    p.add_argument("--learn-ngrams", action="store_true",
                   help="let the target's n-gram cache learn from the benchmark's replies, as chats do "
                        "(then a later run of the same prompt may draft an earlier run's reply); by "
                        "default it is used as it was and learns nothing")
    p.add_argument("--no-calibrate", action="store_true",
                   help="do not time verify batches at draft load (a new pair then learns its costs "
                        "inside its first replies)")
    p.add_argument("--draft-max", type=int, default=DEFAULT_DRAFT_MAX,
                   help=f"a chain's length and adaptive's cap (default {DEFAULT_DRAFT_MAX})")
    p.add_argument("--draft-min", type=int, default=0)
    p.add_argument("--p-min", type=float, default=0.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", dest="json_out", help="write all runs and the summary to this file")
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--gpu-layers", type=int, default=0)
    p.add_argument("--draft-gpu-layers", type=int, default=0)
    add_sampling_args(p, max_tokens=128)


def run(a: argparse.Namespace) -> int:
    try:
        prompts = load_prompts(a.prompts)
        modes = parse_modes(a.modes, a.draft_max, draft_min=a.draft_min, p_min=a.p_min)
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    if a.categories:
        wanted = {c.strip() for c in a.categories.split(",")}
        prompts = [p for p in prompts if p.category in wanted]
    if a.limit:
        prompts = prompts[: a.limit]
    if not prompts:
        return fail("no prompts to run")
    if a.cold:
        # Learned policy state lives under the data folder: a fresh one is a new pair's first use.
        os.environ["SPECULA_HOME"] = tempfile.mkdtemp(prefix="specula-bench-cold-")
    try:
        engine = Engine(dataclasses.replace(engine_options(a), calibrate=not a.no_calibrate))
        engine.load_target(a.target)
        if a.draft:
            load_draft_or_head(engine, a)
        # a head mode without its head fails closed; mtp without MTP layers is skipped below
        check_mtp(engine, [m.spec.mode.value for m in modes if m.spec.mode is not Mode.MTP])
    except LoadError as exc:
        return fail(str(exc))
    skipped: list[str] = []
    if not engine.mtp_layers and any(m.spec.mode is Mode.MTP for m in modes):
        # a mode the target cannot run is left out with a note; the others still run
        skipped = [f"{m.label}: skipped: {mtp_refusal(target_name(engine))}"
                   for m in modes if m.spec.mode is Mode.MTP]
        modes = [m for m in modes if m.spec.mode is not Mode.MTP]
    for note in skipped:
        say(f"specula: note: {note}", file=sys.stderr)
    params = sampling_params(a)
    if engine.ngrams is not None and engine.ngrams.notice:
        say(engine.ngrams.notice, file=sys.stderr)
    say(f"target {a.target}\ndraft  {a.draft}\nbackend {engine.backend}, {engine.n_threads} threads, "
          f"{len(prompts)} prompts x {len(modes)} modes x {a.repeat}, max {params.max_tokens} tokens, "
          f"{params.acceptance_rule.value}", file=sys.stderr)

    def progress(r: RunResult) -> None:
        say(f"  {r.prompt_id:<22} {r.mode:<10} {r.tok_per_s:6.1f} tok/s  accept {r.acceptance:4.0%}"
              + ("" if r.identical in (None, True) else "  (diverged)"), file=sys.stderr)

    report = run_bench(engine, prompts, modes, params, repeat=a.repeat, on_run=progress, cold=a.cold,
                       fresh=not a.reuse_prefix, learn_ngrams=a.learn_ngrams)
    report.skipped[:0] = skipped  # the report lists them with the prompts it skipped
    if not report.runs:
        engine.close()
        return fail("no prompt this target can run")
    report.setup.update({
        "target": a.target, "draft": a.draft, "backend": engine.backend, "threads": engine.n_threads,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "modes": {m.label: m.spec.to_dict() for m in modes}, "sampling": params.to_dict(), "repeat": a.repeat,
        "cold": a.cold,
        "fresh_caches": not a.reuse_prefix,
        "calibrated": not a.no_calibrate,
        "command": " ".join(sys.argv),
    })
    say(format_report(report))
    if a.json_out:
        with open(a.json_out, "w", encoding="utf-8") as fh:
            json.dump(report.to_json(), fh, indent=1)
    engine.close()
    return 0
