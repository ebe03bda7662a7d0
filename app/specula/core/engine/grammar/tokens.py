"""The tokens a grammar names, and what llama.cpp's grammar reads as their text.

A grammar may name tokens (``<[id]>``, ``<|im_start|>``); llama.cpp matches those by id,
everything else by the text of each token. GrammarState uses these to check a named
token before llama.cpp accepts it (see ``GrammarState._named_token_safe``).
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp as L

from specula.core.engine.grammar.text import token_ref_spans


def referenced_ids(vocab: Any, text: str) -> frozenset[int]:
    """The ids of the tokens ``text`` names, resolved as llama.cpp's parser does."""
    ids: set[int] = set()
    for span in token_ref_spans(text):
        if span.startswith("<[") and span.endswith("]>") and span[2:-2].isdigit():
            ids.add(int(span[2:-2]))
            continue
        data = span.encode("utf-8")
        buf = (L.llama_token * 2)()
        if L.llama_tokenize(vocab, data, len(data), buf, 2, False, True) == 1:
            ids.add(int(buf[0]))
    return frozenset(ids)


def piece_text(vocab: Any, token: int) -> str:
    """A token's text as llama.cpp's grammar reads it (special tokens as their text);
    '' when it is not whole UTF-8."""
    buf = ctypes.create_string_buffer(256)
    n = L.llama_token_to_piece(vocab, token, buf, 256, 0, True)
    if n < 0:
        buf = ctypes.create_string_buffer(-n)
        n = L.llama_token_to_piece(vocab, token, buf, -n, 0, True)
    try:
        return buf.raw[:n].decode("utf-8")
    except UnicodeDecodeError:
        return ""


_SINGLE_CHARS: dict[int, dict[str, int]] = {}


def single_char_token(vocab: Any, ch: str) -> int | None:
    """The lowest id whose text is exactly ``ch`` (None: no such token). The table is
    built once per vocabulary, by one pass over it, for grammars that name tokens."""
    key = ctypes.cast(vocab, ctypes.c_void_p).value or 0
    table = _SINGLE_CHARS.get(key)
    if table is None:
        table = {}
        for t in range(int(L.llama_vocab_n_tokens(vocab))):
            s = piece_text(vocab, t)
            if len(s) == 1 and s not in table:
                table[s] = t
        _SINGLE_CHARS[key] = table
    return table.get(ch)
