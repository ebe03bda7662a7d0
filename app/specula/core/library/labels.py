"""How a model is named in a picker: a clean name, then its size and quantization apart.

Why: file names of one family share their start and end
("qwen2.5-coder-1.5b-…-q4_k_m.gguf" and "qwen2.5-coder-0.5b-…-q4_k_m.gguf"), so two
boxes elided in the middle look the same; and a header's ``general.name`` often
carries the quantization of the checkpoint it was converted from ("… Instruct
AWQ" on a Q4_K_M file). The label keeps the name without any quantization words
and shows the file's own quantization (from its header's file type, else its
name) and size as a separate part that is never elided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from specula.core.gguf.model_info import ModelInfo, quantization_from_name
from specula.core.sizes import byte_size

# Quantization and format words a name may carry from where it was converted.
_STALE = re.compile(
    r"(?<![A-Za-z0-9])(?:AWQ|GPTQ|GGUF|GGML|EXL2|MLX|BNB|HQQ|INT[48]|FP8|W[48]A16|"
    r"I?Q\d(?:_[A-Z0-9]+)*|[BF]F?16|F32)(?![A-Za-z0-9])", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_.-]+$|^[\s_.-]+")


def clean_name(name: str) -> str:
    """``name`` without quantization or format words: 'Qwen2.5 Coder 0.5B Instruct AWQ'
    -> 'Qwen2.5 Coder 0.5B Instruct'."""
    out = _STALE.sub("", name)
    out = re.sub(r"([\s_-])[\s_-]+", r"\1", out)
    out = _SEPARATORS.sub("", out)
    return out or name


@dataclass(frozen=True)
class ModelLabel:
    name: str  # elidable
    size: str  # "1.5B", else the file size
    quant: str  # the file's own quantization ("" when unknown)

    @property
    def detail(self) -> str:
        """'1.5B · Q4_K_M': the part a picker never elides."""
        return " · ".join(p for p in (self.size, self.quant) if p)

    @property
    def text(self) -> str:
        return f"{self.name}  {self.detail}" if self.detail else self.name


def label_for(path: str | Path, info: ModelInfo | None = None,
              file_size: int | None = None) -> ModelLabel:
    """The label of the file at ``path``: from its header summary when known, else its name."""
    p = Path(path)
    if info is not None:
        size = info.size_label or (byte_size(info.file_size) if info.file_size else "")
        quant = info.quantization or quantization_from_name(p.name) or ""
        return ModelLabel(clean_name(info.display_name), size, quant)
    quant = quantization_from_name(p.name) or ""
    size = byte_size(file_size) if file_size else ""
    return ModelLabel(clean_name(p.stem), size, quant)


def describe(info: ModelInfo) -> str:
    """One line for a status: 'Qwen2.5 Coder 0.5B Instruct · qwen2 · 0.5B · Q4_K_M'."""
    label = label_for(info.source, info)
    bits = [label.name, info.architecture, label.size, label.quant]
    return " · ".join(b for b in bits if b)
