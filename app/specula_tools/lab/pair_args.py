"""The command line and engine every pair-measuring lab tool shares.

The tools that measure a target and draft pair (``follow_up``, ``probe_cost``,
``probe_steps``, ``reply_losses``, ``plain_drift``, ``agreement_trace``,
``coupling_cost``) take the same arguments for the pair, the prompts, the reply length
and the threads, and open the pair the same way; one helper keeps those spellings and
defaults in one place, so a tool only adds what it measures.
"""

from __future__ import annotations

import argparse

from specula.core.engine.engine import Engine, EngineOptions

PACKAGED = object()
"""``prompts_file`` default meaning: no default file, the packaged suite is used."""


def pair_parser(doc: str | None, *, prompts_file: object = PACKAGED, max_tokens: int = 96,
                threads: int | None = 1, prog: str | None = None) -> argparse.ArgumentParser:
    """A parser with ``--target``, ``--draft``, ``--prompts-file`` (``None``: left out),
    ``--max-tokens`` and ``--threads``; the description is the docstring's first line."""
    ap = argparse.ArgumentParser(prog=prog, description=(doc or "").splitlines()[0] if doc else None)
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    if prompts_file is PACKAGED:
        ap.add_argument("--prompts-file", help="JSONL prompts (default: the packaged suite)")
    elif prompts_file is not None:
        ap.add_argument("--prompts-file", default=prompts_file)
    ap.add_argument("--max-tokens", type=int, default=max_tokens)
    ap.add_argument("--threads", type=int, default=threads)
    return ap


def open_pair(a: argparse.Namespace, *, calibrate: bool, draft: bool = True, n_ctx: int = 4096) -> Engine:
    """An engine with ``a.target`` loaded and, where ``draft``, ``a.draft`` beside it."""
    eng = Engine(EngineOptions(n_ctx=n_ctx, n_threads=a.threads, calibrate=calibrate))
    eng.load_target(a.target)
    if draft:
        eng.load_draft(a.draft)
    return eng
