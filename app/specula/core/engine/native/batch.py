"""A reusable llama_batch whose arrays are numpy views: filling one costs microseconds.

One sequence at consecutive positions (prefill, a chain's verify, a draft's feed) or
arbitrary positions and sequence sets (a token tree). Small batches are filled element
by element: numpy's slice stores cost more than the few tokens they write.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import llama_cpp as L
import numpy as np

from specula.core.engine.native.handle import NativeHandle

_SMALL_BATCH = 8  # batches up to this many tokens are filled element by element


class Batch(NativeHandle):
    """A reusable llama_batch with numpy views over its arrays."""

    def __init__(self, capacity: int, n_seq_max: int = 1) -> None:
        self.capacity = capacity
        self.n_seq_max = n_seq_max
        self._b = L.llama_batch_init(capacity, 0, n_seq_max)
        ct = np.ctypeslib
        self.token = ct.as_array(self._b.token, shape=(capacity,))
        self.pos = ct.as_array(self._b.pos, shape=(capacity,))
        self.n_seq_id = ct.as_array(self._b.n_seq_id, shape=(capacity,))
        self.logits = ct.as_array(
            ctypes.cast(self._b.logits, ctypes.POINTER(ctypes.c_int8)), shape=(capacity,)
        )
        self.seq_ids = [ct.as_array(self._b.seq_id[i], shape=(n_seq_max,)) for i in range(capacity)]
        for row in self.seq_ids:
            row[0] = 0
        self._dirty_seq = False
        self.n_outputs = 0

    @property
    def n_tokens(self) -> int:
        return int(self._b.n_tokens)

    def fill(self, tokens: Sequence[int], start_pos: int, *, outputs: str = "last", seq: int = 0) -> None:
        """One sequence, consecutive positions; outputs 'last', 'all' or 'none'."""
        n = len(tokens)
        if n > self.capacity:
            raise ValueError(f"batch of {n} tokens exceeds capacity {self.capacity}")
        if n <= _SMALL_BATCH and seq == 0 and not self._dirty_seq:
            self._fill_small(tokens, start_pos, outputs)
            return
        self.token[:n] = tokens
        self.pos[:n] = np.arange(start_pos, start_pos + n, dtype=np.int32)
        self.n_seq_id[:n] = 1
        if seq != 0 or self._dirty_seq:
            for i in range(n):
                self.seq_ids[i][0] = seq
            self._dirty_seq = seq != 0
        self.logits[:n] = 1 if outputs == "all" else 0
        if outputs == "last" and n:
            self.logits[n - 1] = 1
        self.n_outputs = n if outputs == "all" else (1 if outputs == "last" and n else 0)
        self._b.n_tokens = n

    def _fill_small(self, tokens: Sequence[int], start_pos: int, outputs: str) -> None:
        """:meth:`fill` for a verify-sized batch: element stores through ctypes cost less
        than numpy's slice assignments (each a conversion of a Python list) at this size."""
        b = self._b
        tok, pos, nsi, lg = b.token, b.pos, b.n_seq_id, b.logits
        out = 1 if outputs == "all" else 0
        for j, t in enumerate(tokens):
            tok[j] = t
            pos[j] = start_pos + j
            nsi[j] = 1
            lg[j] = out
        n = len(tokens)
        if outputs == "last" and n:
            lg[n - 1] = 1
        self.n_outputs = n if outputs == "all" else (1 if outputs == "last" and n else 0)
        b.n_tokens = n

    def fill_tree(
        self, tokens: Sequence[int], positions: Sequence[int], seq_sets: Sequence[Sequence[int]]
    ) -> None:
        """Arbitrary positions and sequence sets, every entry an output (tree verify/draft)."""
        n = len(tokens)
        if n > self.capacity:
            raise ValueError(f"batch of {n} tokens exceeds capacity {self.capacity}")
        self.token[:n] = tokens
        self.pos[:n] = positions
        for i, seqs in enumerate(seq_sets):
            if len(seqs) > self.n_seq_max:
                raise ValueError("more sequence ids than the batch allows")
            self.n_seq_id[i] = len(seqs)
            self.seq_ids[i][: len(seqs)] = seqs
        self._dirty_seq = True
        self.logits[:n] = 1
        self.n_outputs = n
        self._b.n_tokens = n

    @property
    def raw(self) -> Any:
        return self._b

    def close(self) -> None:
        if getattr(self, "_b", None) is not None:
            L.llama_batch_free(self._b)
            self._b = None
