"""Independent references for the grammar tests: a small language checked by hand, the
mask it implies over a vocabulary, and a validator for the JSON schemas the tests use.

Nothing here uses the engine's grammar code: the language is a Python regex, a
prefix is viable when finishing its word and adding the final "." (or a word after
a trailing space) completes it, and token pieces come from llama.cpp's own vocabulary
API on the reference model.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llama_cpp as L
import numpy as np

from tests.core.engine.reference import EOG, Cell, FreshTarget, Transform, penalize, transform

FIRST = (b"lorem", b"ipsum", b"zebra")
REST = (b"quartz", b"lorem")


@dataclass(frozen=True)
class Lang:
    """A language given by hand: its GBNF and, independently, its two predicates."""

    gbnf: str
    complete: Callable[[bytes], bool]  # a whole sentence
    viable: Callable[[bytes], bool]  # a prefix of some sentence


# root ::= ("lorem" | "ipsum" | "zebra") (" " ("quartz" | "lorem"))* "."
SMALL_GBNF = 'root ::= ("lorem" | "ipsum" | "zebra") (" " ("quartz" | "lorem"))* "."'
SMALL_RE = re.compile(rb"(lorem|ipsum|zebra)( (quartz|lorem))*\.")
_COMPLETIONS = [b""] + [w[i:] + b"." for w in FIRST + REST for i in range(len(w) + 1)]


def complete(text: bytes) -> bool:
    return SMALL_RE.fullmatch(text) is not None


def viable(text: bytes) -> bool:
    """Whether ``text`` is a prefix of the small language (finishing its word and adding
    the final "." -- or a word after a trailing space -- completes every viable prefix)."""
    return any(complete(text + c) for c in _COMPLETIONS)


SMALL = Lang(SMALL_GBNF, complete, viable)
# up to twelve lower-case letters or spaces, then a full stop: most words of the tiny
# vocabulary are allowed at first, digits, capitals, punctuation and other bytes are not
LETTERS = Lang(
    'root ::= [a-z ]{1,12} "."',
    lambda s: re.fullmatch(rb"[a-z ]{1,12}\.", s) is not None,
    lambda s: re.fullmatch(rb"[a-z ]{0,12}|[a-z ]{1,12}\.", s) is not None,
)


def pieces(ref: FreshTarget) -> list[bytes]:
    """Every token's bytes as generated text (llama_token_to_piece, special=False)."""
    out = []
    buf = ctypes.create_string_buffer(256)
    for t in range(ref.n_vocab):
        n = L.llama_token_to_piece(ref._vocab, t, buf, 256, 0, False)
        out.append(buf.raw[:n] if n > 0 else b"")
    return out


def allowed_mask(text: bytes, toks: Sequence[bytes], ref: FreshTarget, lang: Lang = SMALL) -> np.ndarray:
    """The small language's mask after ``text``: a token is allowed when its non-empty
    piece keeps the text viable; an end-of-generation token when the text is complete."""
    done = lang.complete(text)
    return np.array([(done if ref.is_eog(t) else bool(p) and lang.viable(text + p))
                     for t, p in enumerate(toks)])


def masked_joint(ref: FreshTarget, prompt: Sequence[int], t: Transform, n: int,
                 toks: Sequence[bytes], lang: Lang) -> dict[Cell, float]:
    """Law of the first ``n`` tokens when every position is constrained by ``lang``:
    forbidden logits at -inf, then the transform (tokens of p = 0 dropped)."""
    out: dict[Cell, float] = {}

    def walk(prefix: Cell, text: bytes, prob: float) -> None:
        if len(prefix) == n:
            out[prefix] = out.get(prefix, 0.0) + prob
            return
        history = [*prompt, *prefix]
        x = penalize(ref.logits(history), history, t)
        x = np.where(allowed_mask(text, toks, ref, lang), x, -np.inf)
        for tok, pr in transform(x, t).items():
            if pr <= 0.0:
                continue
            if ref.is_eog(tok):
                cell = (*prefix, EOG)
                out[cell] = out.get(cell, 0.0) + prob * pr
            else:
                walk((*prefix, tok), text + toks[tok], prob * pr)

    walk((), b"", 1.0)
    return out


# -- a validator for the schema subset the tests use ---------------------------------------


def validate(value: Any, schema: dict[str, Any], where: str = "$") -> None:
    """Raise AssertionError unless ``value`` satisfies ``schema`` (type, enum, properties,
    required, additionalProperties: false, items, maxItems, maxLength, pattern)."""
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    kind = schema.get("type")
    checks = {"object": dict, "array": list, "string": str, "boolean": bool}
    if kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: not an integer"
    elif kind is not None:
        assert isinstance(value, checks[kind]), f"{where}: {value!r} is not {kind}"
    if kind == "string" and "maxLength" in schema:
        # llama.cpp's grammar counts code points as it decodes token bytes, taking a
        # malformed UTF-8 sequence (a random model's stray byte tokens) as one code point,
        # which Python shows as one U+FFFD per byte: count it as llama.cpp does.
        n = len(re.sub("\ufffd+", "?", value))
        assert n <= schema["maxLength"], f"{where}: longer than {schema['maxLength']}"
    if kind == "string" and "pattern" in schema:
        assert re.search(schema["pattern"], value), f"{where}: {value!r} !~ {schema['pattern']}"
    if kind == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key!r}"
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            assert not extra, f"{where}: unexpected {sorted(extra)}"
        for key, sub in props.items():
            if key in value:
                validate(value[key], sub, f"{where}.{key}")
    if kind == "array":
        if "maxItems" in schema:
            assert len(value) <= schema["maxItems"], f"{where}: more than {schema['maxItems']} items"
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{where}[{i}]")

