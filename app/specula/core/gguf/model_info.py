"""GGUF header -> :class:`ModelInfo`, without loading any weights.

Works on a local path or on any :class:`~specula.core.gguf.reader.ByteSource`
(the hub module passes one that fetches HTTP ranges), so a model can be
described, and a draft checked against a target, before anything is
downloaded or loaded.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

from specula.core.gguf.memory_kind import MAX_LAYERS, MemoryKind, memory_kind, memory_shape
from specula.core.gguf.reader import (
    ByteSource,
    FileSource,
    GGUFError,
    GGUFHeader,
    read_header,
)
from specula.core.safe_text import display_text

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
    # What the model is (see memory_kind.py): mixture of experts, MTP layers, and the
    # layers that hold a KV cache or a recurrent state. Counts are 0 when the header has
    # no such key (llama.cpp's default); None means not known: a shape the header does
    # not give, or a library index entry written before these fields existed.
    expert_count: int | None = None
    expert_used_count: int | None = None
    nextn_layers: int | None = None  # <arch>.nextn_predict_layers: MTP layers after the trunk
    attention_layers: int | None = None  # trunk layers with a KV cache
    recurrent_layers: int | None = None  # trunk layers with a recurrent state
    recurrent_state_bytes: int | None = None  # one sequence's recurrent state, all layers

    @property
    def display_name(self) -> str:
        return self.name or Path(self.source).stem

    @property
    def memory(self) -> MemoryKind | None:
        """Attention, recurrent or hybrid memory, from the architecture (as llama.cpp decides)."""
        return memory_kind(self.architecture)

    @property
    def trunk_layers(self) -> int | None:
        """Layers of the model proper: the block count less the MTP layers stored after it."""
        if self.n_layers is None:
            return None
        return self.n_layers - (self.nextn_layers or 0)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready view (tokens and the template body left out)."""
        d = asdict(self)
        d.pop("tokenizer", None)
        d.pop("chat_template", None)
        d["display_name"] = self.display_name
        d["memory"] = self.memory.value if self.memory else None
        return d


class _Fields:
    """Typed reads of a header's values: a value of the wrong kind (NaN or infinity
    where a count belongs, text in a list of numbers) is a :class:`GGUFError` that
    names the key, never a ValueError or OverflowError from deep inside."""

    def __init__(self, header: GGUFHeader) -> None:
        self.source = header.source_name
        self.values = header.fields

    def bad(self, key: str, expected: str, value: object) -> GGUFError:
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return GGUFError(self.source, f"{key} should be {expected}, found {shown}")

    def get(self, key: str, default: object = None) -> object:
        return self.values.get(key, default)

    def integer(self, key: str, default: object = None) -> int | None:
        """An integer; a float is accepted when it is finite and whole (some writers)."""
        v = self.values.get(key, default)
        if v is None:
            return None
        return self.as_int(key, v)

    def as_int(self, key: str, v: object) -> int:
        if isinstance(v, bool):
            raise self.bad(key, "an integer", v)
        if isinstance(v, int):
            return v
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            return int(v)
        raise self.bad(key, "an integer", v)

    def int_list(self, key: str) -> list[int]:
        v = self.values.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.bad(key, "a list of integers", v)
        return [self.as_int(key, t) for t in v]

    def flag(self, key: str, default: object = None) -> bool | None:
        v = self.values.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool):
            return v
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise self.bad(key, "true or false", v)

    def text(self, key: str) -> str | None:
        v = self.values.get(key)
        if v is None or isinstance(v, str):
            return v
        raise self.bad(key, "text", v)

    def label(self, key: str) -> str | None:
        """Text only shown to people (names, labels): display-safe."""
        v = self.text(key)
        return display_text(v) if v is not None else None


def size_label_for(n_params: int) -> str:
    """1_543_714_304 -> '1.5B', 494_032_768 -> '494M' (the hub's way of writing sizes)."""
    if n_params >= 1_000_000_000:
        return f"{n_params / 1e9:.1f}B".replace(".0B", "B")
    if n_params >= 1_000_000:
        return f"{n_params / 1e6:.0f}M"
    return f"{n_params / 1e3:.0f}K"


_QUANT_IN_NAME = re.compile(
    r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|[BF]F?16|FP16|F32|FP32|TQ\d_\d|MXFP4(?:_MOE)?)"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def quantization_from_name(filename: str) -> str | None:
    """'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf' -> 'Q4_K_M', '…-fp16.gguf' -> 'F16' (None when
    the name says nothing)."""
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", Path(filename).stem)
    found = _QUANT_IN_NAME.findall(stem)
    if not found:
        return None
    quant = str(found[-1]).upper()
    return {"FP16": "F16", "FP32": "F32"}.get(quant, quant)  # Qwen's "-fp16.gguf" is F16


def _quantization(fields: _Fields, header: GGUFHeader) -> str | None:
    ftype = fields.integer("general.file_type")
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


def _tokenizer(f: _Fields) -> TokenizerInfo | None:
    tokens = f.get("tokenizer.ggml.tokens")
    if tokens is None:
        return None
    if not isinstance(tokens, list):
        raise f.bad("tokenizer.ggml.tokens", "a list of token texts", tokens)
    model = f.text("tokenizer.ggml.model")
    d_bos, d_eos, d_add_bos = _VOCAB_DEFAULTS.get(model or "", (None, None, False))
    merges = f.get("tokenizer.ggml.merges")
    merges_hash = None
    n_merges = 0
    if isinstance(merges, list):
        n_merges = len(merges)
        merges_hash = hashlib.sha256("\n".join(map(str, merges)).encode()).hexdigest()[:16]
    return TokenizerInfo(
        model=model,
        pre=f.text("tokenizer.ggml.pre"),
        tokens=[str(t) for t in tokens],
        token_types=f.int_list("tokenizer.ggml.token_type"),
        merges_hash=merges_hash,
        n_merges=n_merges,
        bos_id=f.integer("tokenizer.ggml.bos_token_id", d_bos),
        eos_id=f.integer("tokenizer.ggml.eos_token_id", d_eos),
        eot_id=f.integer("tokenizer.ggml.eot_token_id"),
        pad_id=f.integer("tokenizer.ggml.padding_token_id"),
        add_bos=f.flag("tokenizer.ggml.add_bos_token", d_add_bos),
        add_eos=f.flag("tokenizer.ggml.add_eos_token", False),
    )


def model_info_from_header(header: GGUFHeader) -> ModelInfo:
    """Build a :class:`ModelInfo` from a parsed header; raises :class:`GGUFError` on
    values of the wrong kind."""
    f = _Fields(header)
    arch = f.text("general.architecture")

    def a_int(key: str) -> int | None:
        return f.integer(f"{arch}.{key}") if arch else None

    n_params = sum(t.n_elements for t in header.tensors) if header.tensors else None
    n_embd = a_int("embedding_length")
    n_head = a_int("attention.head_count")
    kv_key = f"{arch}.attention.head_count_kv"
    if arch and isinstance(f.get(kv_key), list):  # per-layer counts in some architectures
        per_layer = f.int_list(kv_key)
        n_head_kv = max(per_layer) if per_layer else None
    else:
        n_head_kv = a_int("attention.head_count_kv")
    n_head_kv = n_head_kv or n_head
    head_dim = a_int("attention.key_length") or (
        n_embd // n_head if n_embd and n_head else None
    )
    tok = _tokenizer(f)
    template = f.text("tokenizer.chat_template")
    size_label = f.label("general.size_label") or (size_label_for(n_params) if n_params else None)
    vocab_size = len(tok.tokens) if tok else a_int("vocab_size")
    n_layers = a_int("block_count")
    if n_layers is not None and not 0 <= n_layers <= MAX_LAYERS:
        # Checked before anything is sized by it (memory_shape builds per-layer lists):
        # a 500 KB file claiming 100,000,000 layers cost 1.6 GB here.
        raise f.bad(f"{arch}.block_count", f"a layer count from 0 to {MAX_LAYERS} "
                    "(llama.cpp's LLAMA_MAX_LAYERS)", n_layers)
    nextn = a_int("nextn_predict_layers") or 0  # llama.cpp's default when absent
    used_key = f"{arch}.expert_used_count"
    if arch and isinstance(f.get(used_key), list):  # per-layer in some architectures
        expert_used = max(f.int_list(used_key), default=None)
    else:
        expert_used = a_int("expert_used_count")
    trunk = n_layers - nextn if n_layers is not None else None
    if nextn < 0 or (trunk is not None and trunk < 0):
        raise f.bad(f"{arch}.nextn_predict_layers", f"at most the block count ({n_layers})", nextn)
    shape = memory_shape(arch, f.get, trunk)
    return ModelInfo(
        source=header.source_name,
        file_size=header.file_size,
        name=f.label("general.name"),
        basename=f.label("general.basename"),
        architecture=arch,
        parameter_count=n_params,
        size_label=size_label,
        quantization=_quantization(f, header),
        context_length=a_int("context_length"),
        n_layers=n_layers,
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
        expert_count=a_int("expert_count") or 0,
        expert_used_count=expert_used or 0,
        nextn_layers=nextn,
        attention_layers=shape.attention_layers,
        recurrent_layers=shape.recurrent_layers,
        recurrent_state_bytes=(shape.recurrent_layers * shape.state_bytes_per_layer
                               if shape.recurrent_layers is not None
                               and shape.state_bytes_per_layer is not None else None),
    )


def read_model_info(source: str | os.PathLike[str] | ByteSource) -> ModelInfo:
    """Describe a GGUF file (a path or a byte source); raises :class:`GGUFError`."""
    src: ByteSource = FileSource(source) if isinstance(source, (str, os.PathLike)) else source
    return model_info_from_header(read_header(src))


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
