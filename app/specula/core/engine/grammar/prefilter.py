"""The grammar's first-byte prefilter: which tokens a full-vocabulary check can skip.

A grammar position that needs the whole vocabulary checked (a structural position, or
top-k found too few allowed tokens) would otherwise run llama.cpp's grammar over all
152k tokens; most of them start with a byte the grammar refuses on its own.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

import llama_cpp as L
import numpy as np


class FirstBytes:
    """Each token's first byte as llama.cpp's grammar sees its text (special tokens as
    text), the single-byte token of each byte, and the end-of-generation tokens: a
    full-vocabulary check first asks which single bytes may come next and checks only
    the tokens that start with one of them.

    Exact: the grammar matches a token's text code point by code point (a partial
    UTF-8 sequence matches when some completion could), so a token whose first byte is
    refused on its own is refused as well. Bytes without a single-byte token, empty
    pieces and end-of-generation tokens (allowed by another rule) are always checked.
    """

    def __init__(self, vocab: Any, n_vocab: int) -> None:
        first = np.full(n_vocab, 256, dtype=np.int16)  # 256: an empty piece
        single = np.full(256, -1, dtype=np.int64)
        keep = np.zeros(n_vocab, dtype=bool)
        size = 256
        buf = ctypes.create_string_buffer(size)
        for t in range(n_vocab):
            n = L.llama_token_to_piece(vocab, t, buf, size, 0, True)
            if n < 0:  # longer than the buffer (nothing was copied)
                size = -n
                buf = ctypes.create_string_buffer(size)
                n = L.llama_token_to_piece(vocab, t, buf, size, 0, True)
            if n > 0:
                first[t] = buf.raw[0]
                if n == 1:
                    single[buf.raw[0]] = t
            keep[t] = bool(L.llama_vocab_is_eog(vocab, t))
        self.first = first
        self.single = single
        self.always = keep | (first == 256) | (single[np.minimum(first, 255)] < 0)

    @classmethod
    def of(cls, owner: object, vocab: Any, n_vocab: int) -> FirstBytes:
        """The table of ``owner``'s vocabulary (the Model), built once per model and
        dropped with it (about 0.3 s for 152k tokens)."""
        with _first_bytes_lock:
            table = _first_bytes.get(owner)
            if table is None or table.first.shape[0] != n_vocab:
                table = _first_bytes[owner] = cls(vocab, n_vocab)
            return table


_first_bytes: weakref.WeakKeyDictionary[object, FirstBytes] = weakref.WeakKeyDictionary()
_first_bytes_lock = threading.Lock()
