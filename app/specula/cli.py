"""The ``specula`` command: the desktop app with no arguments, tools otherwise.

Each subcommand lives in its own module under ``specula.commands`` and
registers itself here; this file only builds the parser and dispatches.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from specula import __version__

# name -> (module path, help); modules expose add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "info": ("specula.commands.info", "describe a GGUF model (or the system with --system)"),
    "compat": ("specula.commands.compat", "can DRAFT serve as a draft model for TARGET?"),
    "chat": ("specula.commands.chat", "chat in the terminal with speculative decoding"),
    "bench": ("specula.commands.bench", "benchmark plain vs speculative decoding"),
    "models": ("specula.commands.models", "search, download and manage models"),
    "serve": ("specula.commands.serve", "OpenAI-compatible local server"),
    "ngrams": ("specula.commands.ngrams", "list or clear the per-target n-gram caches of prompt lookup"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specula",
        description="Specula: local chat with exact speculative decoding. "
        "With no command, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"specula {__version__}")
    parser.add_argument("--model", help="target GGUF to load when the app opens")
    parser.add_argument("--draft", help="draft GGUF to load when the app opens")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)  # type: ignore[attr-defined]
        p.set_defaults(run=mod.run)  # type: ignore[attr-defined]
    return parser


def _sweep_stale_temps() -> None:
    """Remove what a killed write left in Specula's own folders (core/files.py), once a run
    (a models folder is the user's: a download's small records there are left alone)."""
    from specula.core import files, paths

    for folder in (paths.config_dir, paths.data_dir, paths.cache_dir):
        try:
            files.sweep_stale_temps(folder())
        except OSError:  # a folder that cannot be used: the command itself says so
            pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    _sweep_stale_temps()
    if run is None:
        from specula.gui.app import run_app

        return run_app(model=args.model, draft=args.draft)
    from specula.commands._common import fail
    from specula.core.paths import PathError

    try:
        return run(args)
    except PathError as exc:  # SPECULA_HOME (or a folder under it) unusable: one line
        return fail(str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
