"""Per-model load defaults on the command line (``specula chat``, ``specula serve``).

The options a model's defaults can fill (``--ctx``, ``--threads``,
``--gpu-layers``, ``--draft``, ``--mode``) are parsed with no default of their
own (:func:`defer_defaults`); :func:`apply_load_defaults` then fills each one
not given on the command line from the model's saved defaults
(:mod:`specula.core.library.load_defaults`), else from the command's default.
What was filled in is printed, so a run says where its settings came from.
"""

from __future__ import annotations

import argparse
import sys

from specula.commands._common import say
from specula.core.gpu_layers import AUTO
from specula.core.library.load_defaults import LoadDefaults, defaults_for

CTX_DEFAULT = 4096


def defer_defaults(p: argparse.ArgumentParser) -> None:
    """Parse ``--ctx`` and ``--gpu-layers`` as None when absent (the others already are)."""
    p.set_defaults(ctx=None, gpu_layers=None)


def apply_load_defaults(a: argparse.Namespace, *, quiet: bool = False) -> LoadDefaults:
    """Fill the options not given from the model's defaults; returns those defaults."""
    d = defaults_for(a.target)
    used: list[str] = []
    if a.ctx is None:
        a.ctx = d.n_ctx or CTX_DEFAULT
        if d.n_ctx:
            used.append(f"ctx {d.n_ctx}")
    if a.threads is None and d.threads:
        a.threads = d.threads
        used.append(f"threads {d.threads}")
    if a.gpu_layers is None:
        a.gpu_layers = "auto" if d.gpu_layers in (None, AUTO) else d.gpu_layers
        if d.gpu_layers is not None:
            used.append(f"gpu-layers {a.gpu_layers}")
    if a.draft is None and d.draft:
        a.draft = d.draft
        used.append(f"draft {d.draft}")
    if hasattr(a, "mode") and a.mode is None and d.mode:
        a.mode = d.mode
        used.append(f"mode {d.mode}")
    if used and not quiet:
        say(f"model defaults: {', '.join(used)}", file=sys.stderr)
    return d
