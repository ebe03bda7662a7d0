"""One way to write a byte count, so a file's size reads the same in every view.

Decimal units (kB, MB, GB, TB: powers of 1000) with three significant digits: the
Hugging Face hub and LM Studio show a model's size this way, so "1.12 GB" here is the
figure the user saw where they found the file. Memory figures (RAM, VRAM, a KV cache,
the process's resident size) use the same function: the fit check sets a file's size
against free memory in one sentence, and two units there would make equal bytes look
unequal.
"""

from __future__ import annotations

UNITS = ("B", "kB", "MB", "GB", "TB")


def byte_size(n: float | None) -> str:
    """491_400_064 -> '491 MB', 1_117_320_768 -> '1.12 GB', 12_345 -> '12.3 kB';
    whole bytes below 1 kB; None (not known) -> '?'."""
    if n is None:
        return "?"
    value = float(n)
    unit = UNITS[0]
    for unit in UNITS:
        # 999.5 and above rounds to 1000 at three digits: the next unit writes it
        if abs(value) < 999.5 or unit == UNITS[-1]:
            break
        value /= 1000
    if unit == "B":
        return f"{value:.0f} B"
    digits = 2 if abs(value) < 9.995 else 1 if abs(value) < 99.95 else 0
    return f"{value:.{digits}f} {unit}"
