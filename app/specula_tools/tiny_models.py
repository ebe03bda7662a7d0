"""Tiny GGUF models built on the fly with the ``gguf`` package.

Llama architecture, a ~300-token byte-level BPE vocabulary, random f32
weights, a few hundred KB: llama.cpp loads one in milliseconds. The tests,
the screenshot tool and the packaging smoke test use them so that nothing
needs a download or a real model.

Families:

* ``target`` and ``draft``: same tokenizer; the draft is the target's weights
  plus noise, so it agrees with the target often but not always
  (``draft_noise`` tunes how often; 0 gives a draft that is always right).
* ``other``: a different vocabulary and tokenizer type (an incompatible draft).
* variants of the target that differ in exactly one tokenizer property
  (vocab size, BOS id, add_bos, add_eos, one token's text, tokenizer type,
  pre-tokenizer), for the compatibility rules.
* drafts for the engine's edge cases (:data:`EDGE_DRAFTS`, built by
  :func:`build_edge_drafts`): a close draft (accepted more often than
  ``draft``), a flat draft (near-uniform logits: every token about equally
  likely, so a confidence cut-off stops it at once) and a draft whose training
  context is 64 tokens (the engine caps its context there).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import gguf
import numpy as np

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
MERGE_WORDS = [
    "the", "and", "ing", "ion", "that", "for", "def", "return", "print", "self",
    "is", "in", "to", "of", "it", "on", "er", "re", "an", "at", "en", "es", "or",
    "hello", "world", "code", "speed", "draft", "token", "model",
]


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def _bpe_vocab(words: list[str]) -> tuple[list[str], list[str]]:
    """Byte tokens plus merged tokens for ``words`` (and their space-prefixed forms)."""
    b2u = _bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    merges: list[str] = []
    known = set(tokens)
    for word in words:
        for form in (word, " " + word):
            chars = "".join(b2u[b] for b in form.encode())
            cur = chars[0]
            for ch in chars[1:]:
                merged = cur + ch
                if merged not in known:
                    merges.append(f"{cur} {ch}")
                    tokens.append(merged)
                    known.add(merged)
                cur = merged
    return tokens, merges


@dataclass(frozen=True)
class TinySpec:
    """Everything that defines one tiny model file."""

    name: str = "tiny-target"
    seed: int = 1234
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    n_layers: int = 2
    n_ctx: int = 2048
    logit_scale: float = 0.6
    noise: float = 0.0  # relative noise added to every weight (the draft)
    noise_seed: int = 99
    extra_tokens: int = 0
    tokenizer_model: str = "gpt2"
    pre: str = "default"
    bos_id: int = 0
    eos_id: int = 2
    add_bos: bool = True
    add_eos: bool = False
    renamed_token: int | None = None  # give this id another text
    merge_words: tuple[str, ...] = tuple(MERGE_WORDS)
    chat_template: str | None = CHATML_TEMPLATE


def add_tokenizer(w: gguf.GGUFWriter, spec: TinySpec) -> int:
    """Write ``spec``'s tokenizer and chat template into ``w``; returns the vocabulary size.

    The tiny families share it (with the defaults), so every tiny model and draft share a vocabulary.
    """
    body, merges = _bpe_vocab(list(spec.merge_words))
    tokens = SPECIALS + body + [f"<|extra_{i}|>" for i in range(spec.extra_tokens)]
    if spec.renamed_token is not None:
        tokens[spec.renamed_token] = tokens[spec.renamed_token] + "\u2021"
    w.add_tokenizer_model(spec.tokenizer_model)
    w.add_tokenizer_pre(spec.pre)
    w.add_token_list(tokens)
    w.add_token_types([3] * len(SPECIALS) + [1] * len(body) + [4] * spec.extra_tokens)
    w.add_token_merges(merges)
    w.add_bos_token_id(spec.bos_id)
    w.add_eos_token_id(spec.eos_id)
    w.add_pad_token_id(3)
    w.add_add_bos_token(spec.add_bos)
    w.add_add_eos_token(spec.add_eos)
    if spec.chat_template:
        w.add_chat_template(spec.chat_template)
    return len(tokens)


def write_out(w: gguf.GGUFWriter, path: Path) -> Path:
    """Write ``w``'s header, key-values and tensors to its file and close it; returns ``path``."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def build_tiny_model(path: str | Path, spec: TinySpec = TinySpec()) -> Path:
    """Write a tiny llama-architecture GGUF file at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(spec.name)
    w.add_context_length(spec.n_ctx)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_layers)
    w.add_feed_forward_length(spec.n_ff)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(spec.n_embd // spec.n_head)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    n_vocab = add_tokenizer(w, spec)

    rng = np.random.default_rng(spec.seed)
    noise_rng = np.random.default_rng(spec.noise_seed)
    hd = spec.n_embd // spec.n_head
    d, ff = spec.n_embd, spec.n_ff

    def mat(rows: int, cols: int, scale: float) -> np.ndarray:
        base = rng.standard_normal((rows, cols)).astype(np.float32) * scale
        if spec.noise:
            base += noise_rng.standard_normal((rows, cols)).astype(np.float32) * scale * spec.noise
        return base

    w.add_tensor("token_embd.weight", mat(n_vocab, d, 1.0))
    for i in range(spec.n_layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(d, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", mat(d, d, d**-0.5))
        w.add_tensor(p + "attn_k.weight", mat(spec.n_head_kv * hd, d, d**-0.5))
        w.add_tensor(p + "attn_v.weight", mat(spec.n_head_kv * hd, d, d**-0.5))
        w.add_tensor(p + "attn_output.weight", mat(d, d, d**-0.5))
        w.add_tensor(p + "ffn_norm.weight", np.ones(d, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", mat(ff, d, d**-0.5))
        w.add_tensor(p + "ffn_up.weight", mat(ff, d, d**-0.5))
        w.add_tensor(p + "ffn_down.weight", mat(d, ff, ff**-0.5))
    w.add_tensor("output_norm.weight", np.ones(d, dtype=np.float32))
    w.add_tensor("output.weight", mat(n_vocab, d, spec.logit_scale))
    return write_out(w, path)


TARGET = TinySpec()
DRAFT = replace(TARGET, name="tiny-draft", noise=0.08)  # accepted ~70% of the time, greedy
WRONG_DRAFT = replace(TARGET, name="tiny-wrong-draft", seed=4321)  # same tokenizer, other weights
EXACT_DRAFT = replace(TARGET, name="tiny-exact-draft")  # identical weights: always accepted
OTHER = replace(
    TARGET, name="tiny-other", seed=777, tokenizer_model="llama", pre="default",
    merge_words=("zebra", "quartz", "lorem", "ipsum"), bos_id=1, eos_id=2,
)

# One tokenizer property changed at a time (compatibility tests).
VARIANTS: dict[str, TinySpec] = {
    "vocab_small_diff": replace(TARGET, name="tiny-vocab+64", extra_tokens=64),
    "vocab_size": replace(TARGET, name="tiny-vocab+200", extra_tokens=200),
    "bos_id": replace(TARGET, name="tiny-bos", bos_id=1),
    "add_bos": replace(TARGET, name="tiny-addbos", add_bos=False),
    "add_eos": replace(TARGET, name="tiny-addeos", add_eos=True),
    "token_text": replace(TARGET, name="tiny-text", renamed_token=100),
    "vocab_type": replace(TARGET, name="tiny-spm", tokenizer_model="llama"),
    "pre_tokenizer": replace(TARGET, name="tiny-pre", pre="qwen2"),
}


# Drafts for the engine's edge cases; same tokenizer as the target throughout.
EDGE_DRAFTS: dict[str, TinySpec] = {
    "close_draft": replace(DRAFT, name="tiny-close-draft", noise=0.03),
    "flat_draft": replace(DRAFT, name="tiny-flat-draft", logit_scale=0.01),
    "small_ctx_draft": replace(DRAFT, name="tiny-draft-ctx64", n_ctx=64),
}


def build_edge_drafts(folder: str | Path) -> dict[str, Path]:
    """Build :data:`EDGE_DRAFTS` into ``folder``; returns name -> path."""
    folder = Path(folder)
    return {k: build_tiny_model(folder / f"{s.name}.gguf", s) for k, s in EDGE_DRAFTS.items()}


def build_family(folder: str | Path) -> dict[str, Path]:
    """Build the standard set into ``folder``; returns name -> path."""
    folder = Path(folder)
    out = {
        "target": build_tiny_model(folder / "tiny-target.gguf", TARGET),
        "draft": build_tiny_model(folder / "tiny-draft.gguf", DRAFT),
        "exact_draft": build_tiny_model(folder / "tiny-exact-draft.gguf", EXACT_DRAFT),
        "wrong_draft": build_tiny_model(folder / "tiny-wrong-draft.gguf", WRONG_DRAFT),
        "other": build_tiny_model(folder / "tiny-other.gguf", OTHER),
    }
    for key, spec in VARIANTS.items():
        out[key] = build_tiny_model(folder / f"{spec.name}.gguf", spec)
    return out


if __name__ == "__main__":  # python -m specula_tools.tiny_models OUT_DIR

    from specula_tools.cli import folder_argument

    for k, p in build_family(folder_argument(__doc__, "tiny-models", "where the GGUFs go") or "").items():
        print(f"{k:18} {p} ({p.stat().st_size // 1024} KB)")
