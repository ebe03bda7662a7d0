"""`specula ngrams`: the per-target n-gram caches prompt lookup falls back to (list, clear)."""

from __future__ import annotations

import argparse

from specula.commands._common import say
from specula.core.engine.drafters.ngram_store import cache_dir, clear_caches, list_caches
from specula.core.sizes import byte_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clear", action="store_true",
                   help="delete every n-gram cache (each target starts learning again)")


def run(args: argparse.Namespace) -> int:
    if args.clear:
        say(f"removed {clear_caches()} n-gram cache file(s) from {cache_dir()}")
        return 0
    files = list_caches()
    if not files:
        say(f"no n-gram caches in {cache_dir()}")
        return 0
    for f in files:
        say(f"{f.target:<48} {f.learned:>10,} tokens learned {byte_size(f.size):>10}  {f.path.name}")
    say(f"folder: {cache_dir()}  (specula ngrams --clear deletes them)")
    return 0
