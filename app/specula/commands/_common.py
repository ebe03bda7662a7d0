"""Small helpers the subcommands share.

Every line a command prints goes through :func:`say` (or :func:`fail`): file names,
repository names, model names and header values come from the user's disk, the hub
or a GGUF file, and a name holding ``ESC ] 0 ;`` or ``ESC [ 2 J`` would set the
terminal's title or clear it. :func:`terminal_text` writes every control and
bidi-override character as a visible escape (newlines and tabs kept), once, here.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from specula.core.safe_text import display_text


def terminal_text(text: object) -> str:
    """``text`` safe to write to a terminal: control characters (but newlines and tabs)
    and bidi overrides as visible escapes (``\\x1b``, ``\\u202e``)."""
    return display_text(str(text), keep_newlines=True)


def say(*values: object, file: TextIO | None = None) -> None:
    """``print`` for command output, every value through :func:`terminal_text`."""
    print(*(terminal_text(v) for v in values), file=file or sys.stdout)


def print_json(obj: object) -> None:
    # ensure_ascii (the default) writes every control and non-ASCII character as \\uXXXX
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def fail(message: str, code: int = 2) -> int:
    """Print a clear error (no traceback) and return the exit code."""
    say(f"specula: error: {message}", file=sys.stderr)
    return code
