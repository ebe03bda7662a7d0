"""What a model's name and header say about its size and family.

Why one module: "is this draft smaller than that target?" and "are they the
same family?" are asked by the pairing decision, the hub search for drafts and
the badges; one answer keeps them from disagreeing.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from specula.core.gguf.model_info import ModelInfo, quantization_from_name

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([BM])(?![A-Za-z0-9])", re.IGNORECASE)


def size_from_name(name: str) -> float | None:
    """Parameters a name states: 'Qwen2.5-Coder-7B-Instruct' -> 7e9, '...-500M' -> 5e8."""
    found = _SIZE.findall(name)
    if not found:
        return None
    number, unit = found[0]
    return float(number) * (1e9 if unit.upper() == "B" else 1e6)


def family_prefix(name: str) -> str:
    """The family part of a name, before its size: 'Qwen2.5-Coder-7B-Instruct-GGUF' -> 'Qwen2.5-Coder'."""
    stem = PurePosixPath(name).name.removesuffix(".gguf")
    m = _SIZE.search(stem)
    head = stem[: m.start()] if m else stem
    return head.strip(" -_.") or stem


def family_key(name: str) -> str:
    """A name without size, quantization and 'GGUF', for same-family comparisons."""
    stem = PurePosixPath(name).name.lower().removesuffix(".gguf")
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", stem)
    quant = quantization_from_name(stem + ".gguf")
    if quant:
        stem = re.sub(re.escape(quant.lower()) + r"$", "", stem)
    stem = _SIZE.sub("", stem).replace("gguf", "")
    return "-".join(p for p in re.split(r"[-_. ]+", stem) if p)


def model_scale(info: ModelInfo, name: str | None = None) -> float | None:
    """How big a model is: parameters from its header, else from its name, else bytes."""
    if info.parameter_count:
        return float(info.parameter_count)
    found = size_from_name(name or Path(info.source).name)
    return found or (float(info.file_size) if info.file_size else None)
