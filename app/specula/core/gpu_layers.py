"""GPU layer settings: a count, "all", or "auto", in one int field.

Settings keep ``n_gpu_layers_*`` as ints so older files stay valid: a count
of layers, :data:`ALL` (-1, llama.cpp's "every layer") or :data:`AUTO` (-2:
decide at load time from the free GPU memory, like the command line's
``--gpu-layers auto``). This module imports nothing so the settings and the
hardware floor can both use it.
"""

from __future__ import annotations

AUTO = -2
ALL = -1


def describe(value: int, total: int | None = None) -> str:
    """``auto``, ``all``, ``CPU only`` or ``12 / 29 layers`` for a setting value."""
    if value == AUTO:
        return "auto"
    if value == ALL or (total is not None and value >= total):
        return f"all ({total} / {total} layers)" if total else "all"
    if value == 0:
        return "CPU only"
    return f"{value} / {total} layers" if total else f"{value} layers"
