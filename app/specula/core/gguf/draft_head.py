"""Draft heads (EAGLE-3, DFlash, DSpark) recognised from a GGUF header, and whether one
fits a target: the checks that keep llama.cpp from aborting, done before anything loads.

A head is not a model: it has no token embeddings of its own (it borrows the target's),
reads the inputs of a few target layers, and is worthless beside any other target. What
llama.cpp's loader and drafters require (src/models/eagle3.cpp, src/models/dflash.cpp,
common/speculative.cpp at llama.cpp 0c1e57098):

- EAGLE-3 (``general.architecture = eagle3``): ``eagle3.target_layers``, exactly three
  ids; ``eagle3.target_hidden_size``; one block; an optional ``d2t`` tensor mapping the
  head's own smaller vocabulary to target ids.
- DFlash (``dflash``): ``dflash.target_layers``; ``dflash.block_size`` (16 when absent);
  ``tokenizer.ggml.mask_token_id`` inside the vocabulary (else the first draft aborts).
- DSpark: a DFlash file with a Markov head (``markov_w1`` / ``markov_w2`` tensors); it
  drafts from the anchor (the pending token's own output) unless
  ``dflash.sample_from_anchor`` is false.

Layer id i means "the input of target layer i" (0: the token embeddings), so an id must
be below the target's layer count: an EAGLE-3 id equal to it reads a buffer a llama
graph never fills (garbage, no error), a DFlash id past it aborts the process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from specula.core.gguf.model_info import GGUFError, ModelInfo, model_info_from_header
from specula.core.gguf.reader import FileSource, read_header

HEAD_ARCHS = ("eagle3", "dflash")
DFLASH_DEFAULT_BLOCK = 16  # llama.cpp's value when dflash.block_size is absent

# Target architectures whose llama.cpp graph records each layer's input (see
# specula.core.engine.native.heads.LAYER_INPUT_ARCHS, the same list): any other target
# aborts the process at its first decode with a head's layers turned on.
LAYER_INPUT_ARCHS = frozenset({
    "llama", "qwen3", "qwen3moe", "qwen35", "qwen35moe", "qwen3next", "lfm2", "gemma3n",
    "gemma4", "gpt-oss", "deepseek4", "minimax-01", "minimax-m2", "bailingmoe3", "nemotron_h",
    "mimo2", "nanbeige", "hunyuan-vl", "muse-glimmer", "qwen4exp",
})


@dataclass
class HeadInfo:
    """What a draft head's header says."""

    source: str
    kind: str  # "eagle3", "dflash" or "dspark"
    layer_ids: list[int]
    n_embd: int  # the head's hidden size (a DFlash head's must equal the target's)
    target_hidden: int  # the target hidden size it was trained on
    vocab_size: int | None  # the head file's tokenizer
    draft_vocab: int | None = None  # EAGLE-3 / DFlash with a d2t map: the head's own vocabulary
    block_size: int = 0  # DFlash / DSpark
    mask_token: int | None = None  # DFlash / DSpark
    from_anchor: bool = False  # DSpark: the anchor's output is the first draft
    n_blocks: int = 0
    model: ModelInfo | None = field(default=None, repr=False)

    @property
    def max_draft(self) -> int:
        """The longest draft one step can make (DFlash: a block minus its anchor)."""
        if self.kind == "eagle3":
            return 0  # no limit of its own: a chain, one decode per token
        return self.block_size if self.from_anchor else self.block_size - 1

    def describe(self) -> str:
        """One sentence: what it is, which layers it reads, for which hidden size and vocabulary."""
        layers = ", ".join(str(i) for i in self.layer_ids)
        vocab = f"a vocabulary of {self.vocab_size} tokens" if self.vocab_size else "no vocabulary"
        if self.draft_vocab:
            vocab += f" (drafting over {self.draft_vocab} of them through its d2t map)"
        if self.kind == "eagle3":
            what = f"an EAGLE-3 head reading target layers {layers}"
        else:
            name = "a DSpark head" if self.kind == "dspark" else "a DFlash head"
            what = (f"{name} with block size {self.block_size} (mask token {self.mask_token}) "
                    f"reading target layers {layers}")
        return f"{what}, for targets of hidden size {self.target_hidden} and {vocab}"


def is_head(info: ModelInfo) -> bool:
    return (info.architecture or "") in HEAD_ARCHS


def head_info_from_header(header: object) -> HeadInfo:
    """A :class:`HeadInfo` from a parsed header; GGUFError when it is no head, or a head
    llama.cpp would refuse or abort on (a wrong count of layers, no hidden size)."""
    from specula.core.gguf.reader import GGUFHeader

    assert isinstance(header, GGUFHeader)
    info = model_info_from_header(header)
    arch = info.architecture or ""
    if arch not in HEAD_ARCHS:
        raise GGUFError(info.source, f"not a draft head (architecture {arch or 'missing'})")
    fields = header.fields

    def ints(key: str) -> list[int]:
        v = fields.get(key)
        if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise GGUFError(info.source, f"{key} should be a list of layer ids, found {v!r}"[:200])
        return [int(x) for x in v]

    def uint(key: str, default: int | None = None) -> int | None:
        v = fields.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GGUFError(info.source, f"{key} should be a count, found {v!r}")
        return int(v)

    ids = ints(f"{arch}.target_layers")
    if any(i < 0 for i in ids):
        raise GGUFError(info.source, f"{arch}.target_layers has a negative layer id: {ids}")
    tensors = {t.name: t for t in header.tensors}
    d2t = tensors.get("d2t")
    n_embd = info.n_embd or 0
    if n_embd <= 0:
        raise GGUFError(info.source, f"{arch}.embedding_length is missing")
    if arch == "eagle3":
        if len(ids) != 3:
            raise GGUFError(info.source, f"an EAGLE-3 head reads exactly 3 target layers, this one {len(ids)}")
        hidden = uint("eagle3.target_hidden_size")
        if not hidden:
            raise GGUFError(info.source, "eagle3.target_hidden_size is missing")
        return HeadInfo(info.source, "eagle3", ids, n_embd, hidden, info.vocab_size,
                        draft_vocab=d2t.shape[0] if d2t else None, n_blocks=info.n_layers or 0,
                        model=info)
    block = uint("dflash.block_size", DFLASH_DEFAULT_BLOCK) or 0
    if block < 2:
        raise GGUFError(info.source, f"dflash.block_size should be at least 2, found {block}")
    mask = uint("tokenizer.ggml.mask_token_id")
    if mask is None:
        raise GGUFError(info.source, "a DFlash head needs tokenizer.ggml.mask_token_id")
    dspark = "markov_w1.weight" in tensors
    anchor = fields.get("dflash.sample_from_anchor", True)
    return HeadInfo(info.source, "dspark" if dspark else "dflash", ids, n_embd, n_embd,
                    info.vocab_size, draft_vocab=d2t.shape[0] if d2t else None,
                    block_size=block, mask_token=mask, from_anchor=dspark and anchor is not False,
                    n_blocks=info.n_layers or 0, model=info)


def read_head_info(path: str | os.PathLike[str]) -> HeadInfo:
    """Describe a draft head file; GGUFError when it is unreadable or not a head."""
    return head_info_from_header(read_header(FileSource(path)))


def head_misfits(target: ModelInfo, head: HeadInfo) -> list[str]:
    """Why ``head`` cannot draft for ``target`` (empty: it fits), one sentence per reason."""
    why: list[str] = []
    arch = target.architecture or "?"
    if arch not in LAYER_INPUT_ARCHS:
        why.append(f"llama.cpp cannot hand a head the hidden states of a {arch} target "
                   "(its graph does not record layer inputs; it would abort)")
    n_embd = target.n_embd or 0
    if head.target_hidden != n_embd:
        why.append(f"the head is for targets of hidden size {head.target_hidden}, the target's is {n_embd}")
    elif head.kind != "eagle3" and head.n_embd != n_embd:
        why.append(f"a DFlash head's hidden size ({head.n_embd}) must equal the target's ({n_embd})")
    n_layer = (target.n_layers or 0) - (target.nextn_layers or 0)
    beyond = [i for i in head.layer_ids if i >= n_layer]
    if beyond:
        why.append(f"the head reads target layer {beyond[0]}, the target has layers 0..{n_layer - 1}")
    tv, hv = target.vocab_size, head.vocab_size
    if tv is not None and hv is not None and tv != hv:
        why.append(f"the head's vocabulary has {hv} tokens, the target's {tv}")
    elif (target.tokenizer_fingerprint and head.model is not None and head.model.tokenizer_fingerprint
          and target.tokenizer_fingerprint != head.model.tokenizer_fingerprint):
        why.append("the head's tokenizer differs from the target's")
    if head.draft_vocab is not None and tv is not None and head.draft_vocab > tv:
        why.append(f"the head's d2t map has {head.draft_vocab} entries, more than the target's {tv} tokens")
    if head.mask_token is not None and tv is not None and head.mask_token >= tv:
        why.append(f"the mask token {head.mask_token} is outside the vocabulary ({tv} tokens)")
    return why


__all__ = ["HEAD_ARCHS", "LAYER_INPUT_ARCHS", "HeadInfo", "head_info_from_header", "head_misfits",
           "is_head", "read_head_info"]
