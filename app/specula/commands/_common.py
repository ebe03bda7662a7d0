"""Small helpers the subcommands share."""

from __future__ import annotations

import json
import sys


def print_json(obj: object) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def fail(message: str, code: int = 2) -> int:
    """Print a clear error (no traceback) and return the exit code."""
    print(f"specula: error: {message}", file=sys.stderr)
    return code
