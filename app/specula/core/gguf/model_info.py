"""GGUF header -> :class:`ModelInfo`, without loading any weights.

Works on a local path or on any :class:`~specula.core.gguf.reader.ByteSource`
(the hub module passes one that fetches HTTP ranges), so a model can be
described, and a draft checked against a target, before anything is
downloaded or loaded.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

from specula.core.gguf.reader import (
    ByteSource,
    FileSource,
    GGUFError,
    GGUFHeader,
    read_header,
)

__all__ = ["GGUFError", "ModelInfo", "TokenizerInfo", "read_model_info"]

# Defaults llama.cpp applies when a file does not say (src/llama-vocab.cpp), for the
# common vocab types; pre-tokenizer specific overrides are not modelled.
_VOCAB_DEFAULTS: dict[str, tuple[int | None, int | None, bool]] = {
    "llama": (1, 2, True),  # SentencePiece: bos, eos, add_bos
    "gpt2": (11, 11, False),  # byte-level BPE
    "bert": (101, None, True),
    "t5": (None, 1, False),
}


@dataclass
class TokenizerInfo:
    """The parts of a tokenizer that decide whether two models can share tokens."""

    model: str | None
    pre: str | None
    tokens: list[str]
    token_types: list[int]
    merges_hash: str | None
    n_merges: int
    bos_id: int | None
    eos_id: int | None
    eot_id: int | None
    pad_id: int | None
    add_bos: bool | None
    add_eos: bool | None

    def fingerprint(self) -> str:
        """A short hash over everything that makes two tokenizers interchangeable."""
        h = hashlib.sha256()
        h.update(f"{self.model}|{self.pre}|".encode())
        h.update("\0".join(self.tokens).encode("utf-8", errors="replace"))
        h.update(bytes(t & 0xFF for t in self.token_types))
        h.update(f"|{self.merges_hash}|{self.bos_id}|{self.eos_id}|{self.eot_id}".encode())
        h.update(f"|{self.add_bos}|{self.add_eos}".encode())
        return h.hexdigest()[:16]


@dataclass
class ModelInfo:
    """Everything Specula shows or checks about a GGUF file before loading it."""

    source: str
    file_size: int | None
    name: str | None
    basename: str | None
    architecture: str | None
    parameter_count: int | None
    size_label: str | None
    quantization: str | None
    context_length: int | None
    n_layers: int | None
    n_embd: int | None
    n_head: int | None
    n_head_kv: int | None
    head_dim: int | None
    tokenizer_model: str | None
    tokenizer_pre: str | None
    vocab_size: int | None
    bos_id: int | None
    eos_id: int | None
    add_bos: bool | None
    add_eos: bool | None
    has_chat_template: bool
    tokenizer_fingerprint: str | None
    gguf_version: int
    chat_template: str | None = field(default=None, repr=False)
    tokenizer: TokenizerInfo | None = field(default=None, repr=False)

    @property
    def display_name(self) -> str:
        return self.name or Path(self.source).stem

    def to_dict(self) -> dict[str, object]:
        """JSON-ready view (tokens and the template body left out)."""
        d = asdict(self)
        d.pop("tokenizer", None)
        d.pop("chat_template", None)
        d["display_name"] = self.display_name
        return d


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _bool(v: object) -> bool | None:
    return bool(v) if isinstance(v, (bool, int)) else None


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def size_label_for(n_params: int) -> str:
    """1_543_714_304 -> '1.5B', 494_032_768 -> '494M' (the hub's way of writing sizes)."""
    if n_params >= 1_000_000_000:
        return f"{n_params / 1e9:.1f}B".replace(".0B", "B")
    if n_params >= 1_000_000:
        return f"{n_params / 1e6:.0f}M"
    return f"{n_params / 1e3:.0f}K"


_QUANT_IN_NAME = re.compile(
    r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|[BF]F?16|F32|TQ\d_\d|MXFP4(?:_MOE)?)(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def quantization_from_name(filename: str) -> str | None:
    """'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf' -> 'Q4_K_M' (None when the name says nothing)."""
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", Path(filename).stem)
    found = _QUANT_IN_NAME.findall(stem)
    return found[-1].upper() if found else None


def _quantization(fields: dict[str, object], header: GGUFHeader) -> str | None:
    ftype = _int(fields.get("general.file_type"))
    if ftype is not None:
        try:
            return str(LlamaFileType(ftype).name).removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    # No file type: name the type holding most weights.
    by_type: dict[int, int] = {}
    for t in header.tensors:
        by_type[t.ggml_type] = by_type.get(t.ggml_type, 0) + t.n_elements
    if by_type:
        top = max(by_type, key=lambda k: by_type[k])
        try:
            return str(GGMLQuantizationType(top).name)
        except ValueError:
            return None
    return quantization_from_name(header.source_name)


def _tokenizer(fields: dict[str, object]) -> TokenizerInfo | None:
    tokens = fields.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list):
        return None
    model = _str(fields.get("tokenizer.ggml.model"))
    d_bos, d_eos, d_add_bos = _VOCAB_DEFAULTS.get(model or "", (None, None, False))
    merges = fields.get("tokenizer.ggml.merges")
    merges_hash = None
    n_merges = 0
    if isinstance(merges, list):
        n_merges = len(merges)
        merges_hash = hashlib.sha256("\n".join(map(str, merges)).encode()).hexdigest()[:16]
    types = fields.get("tokenizer.ggml.token_type")
    bos = fields.get("tokenizer.ggml.bos_token_id", d_bos)
    eos = fields.get("tokenizer.ggml.eos_token_id", d_eos)
    add_bos = fields.get("tokenizer.ggml.add_bos_token", d_add_bos)
    add_eos = fields.get("tokenizer.ggml.add_eos_token", False)
    return TokenizerInfo(
        model=model,
        pre=_str(fields.get("tokenizer.ggml.pre")),
        tokens=[str(t) for t in tokens],
        token_types=[int(t) for t in types] if isinstance(types, list) else [],
        merges_hash=merges_hash,
        n_merges=n_merges,
        bos_id=_int(bos),
        eos_id=_int(eos),
        eot_id=_int(fields.get("tokenizer.ggml.eot_token_id")),
        pad_id=_int(fields.get("tokenizer.ggml.padding_token_id")),
        add_bos=_bool(add_bos),
        add_eos=_bool(add_eos),
    )


def model_info_from_header(header: GGUFHeader) -> ModelInfo:
    """Build a :class:`ModelInfo` from a parsed header."""
    f = header.fields
    arch = _str(f.get("general.architecture"))

    def a(key: str) -> object:
        return f.get(f"{arch}.{key}") if arch else None

    n_params = sum(t.n_elements for t in header.tensors) if header.tensors else None
    n_embd = _int(a("embedding_length"))
    n_head = _int(a("attention.head_count"))
    n_head_kv_raw = a("attention.head_count_kv")
    if isinstance(n_head_kv_raw, list):  # per-layer counts in some architectures
        n_head_kv_raw = max(n_head_kv_raw) if n_head_kv_raw else None
    n_head_kv = _int(n_head_kv_raw) or n_head
    head_dim = _int(a("attention.key_length")) or (
        n_embd // n_head if n_embd and n_head else None
    )
    tok = _tokenizer(f)
    template = _str(f.get("tokenizer.chat_template"))
    size_label = _str(f.get("general.size_label")) or (size_label_for(n_params) if n_params else None)
    vocab_size = len(tok.tokens) if tok else _int(a("vocab_size"))
    return ModelInfo(
        source=header.source_name,
        file_size=header.file_size,
        name=_str(f.get("general.name")),
        basename=_str(f.get("general.basename")),
        architecture=arch,
        parameter_count=n_params,
        size_label=size_label,
        quantization=_quantization(f, header),
        context_length=_int(a("context_length")),
        n_layers=_int(a("block_count")),
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_dim=head_dim,
        tokenizer_model=tok.model if tok else None,
        tokenizer_pre=tok.pre if tok else None,
        vocab_size=vocab_size,
        bos_id=tok.bos_id if tok else None,
        eos_id=tok.eos_id if tok else None,
        add_bos=tok.add_bos if tok else None,
        add_eos=tok.add_eos if tok else None,
        has_chat_template=template is not None,
        tokenizer_fingerprint=tok.fingerprint() if tok else None,
        gguf_version=header.version,
        chat_template=template,
        tokenizer=tok,
    )


def read_model_info(source: str | os.PathLike[str] | ByteSource) -> ModelInfo:
    """Describe a GGUF file (a path or a byte source); raises :class:`GGUFError`."""
    src: ByteSource = FileSource(source) if isinstance(source, (str, os.PathLike)) else source
    return model_info_from_header(read_header(src))


def weights_bytes(info: ModelInfo) -> int | None:
    """Bytes the weights occupy (the file size is a close upper bound)."""
    return info.file_size


def tensor_bytes(header: GGUFHeader) -> int:
    """Exact bytes of all tensors from their types and shapes (for remote headers)."""
    total = 0
    for t in header.tensors:
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(t.ggml_type)]
        except (ValueError, KeyError):
            continue
        total += t.n_elements // block * type_size
    return total
