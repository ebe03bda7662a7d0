"""The command line of the tools that take one optional folder (``--help`` included)."""

from __future__ import annotations

import argparse


def folder_argument(doc: str | None, default: str | None, what: str,
                    argv: list[str] | None = None) -> str | None:
    """Parse ``[FOLDER]`` for a tool whose module docstring is ``doc``; ``--help`` prints
    the docstring's first line and exits, instead of being taken for a folder name."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    ap.add_argument("folder", nargs="?", default=default, help=what)
    folder: str | None = ap.parse_args(argv).folder
    return folder
