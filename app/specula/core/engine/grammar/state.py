"""Grammars: GBNF text (JSON mode, a JSON schema, or the user's own) to llama.cpp's
grammar sampler, and the constrained distribution every mode uses.

The grammar itself is llama.cpp's (``llama_sampler_init_grammar`` over the target's
vocabulary): it is applied to a ``llama_token_data_array`` (forbidden tokens get a
logit of -inf), advanced with ``llama_sampler_accept`` along the committed text,
cloned where a proposal branches off it, and freed on every exit path.

The constrained distribution at a position is defined once (docs/engine.md):
penalties, then the grammar mask over the WHOLE vocabulary, then top-k, top-p,
min-p and temperature over the allowed tokens (llama.cpp's "grammar first"
order). :meth:`GrammarState.candidates` computes exactly that without masking
152k tokens: it checks the best ``m`` tokens by logit and grows ``m`` until ``k``
of them are allowed (top-k needs no more: any allowed token outside them has a
smaller logit), falling back to the full vocabulary only when it must. Greedy
starts with ``m = 1``: the unconstrained pick, kept when the grammar allows it.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import time
from typing import Any

import llama_cpp as L
import numpy as np
import numpy.typing as npt

from specula.core.engine.grammar import cut as grammar_cut
from specula.core.engine.grammar.compile import (
    GRAMMAR_BUDGET_MESSAGE,
    GrammarBudgetError,
    init_sampler,
)
from specula.core.engine.grammar.compile import (  # re-exported: compile.py owns them
    JSON_OBJECT_GRAMMAR as JSON_OBJECT_GRAMMAR,
)
from specula.core.engine.grammar.compile import GrammarError as GrammarError  # re-exported
from specula.core.engine.grammar.compile import (
    json_schema_grammar as json_schema_grammar,  # re-exported
)
from specula.core.engine.grammar.compile import validate_grammar as validate_grammar  # re-exported
from specula.core.engine.grammar.prefilter import FirstBytes as FirstBytes  # re-exported
from specula.core.engine.grammar.text import has_token_refs as has_token_refs  # re-exported
from specula.core.engine.grammar.text import token_ref_marks
from specula.core.engine.grammar.tokens import piece_text, referenced_ids, single_char_token
from specula.core.engine.native.handle import NativeHandle
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.sampling.rules import F32, F64, I64, SamplingParams

log = logging.getLogger("specula.engine")
Bools = npt.NDArray[np.bool_]


_TOKEN_DTYPE = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])  # llama_token_data
assert _TOKEN_DTYPE.itemsize == ctypes.sizeof(L.llama_token_data)


# -- the state along a reply -------------------------------------------------------------


class GrammarState(NativeHandle):
    """One llama grammar sampler: a position in the grammar. Free it with ``close``."""

    prefilter = True  # check a full vocabulary through FirstBytes (tests compare both)

    MEMO_SIZE = 64  # full-vocabulary answers a reply keeps (structural positions, mostly)

    def __init__(self, smpl: Any, n_vocab: int, vocab: Any = None, owner: object = None,
                 path: list[int] | None = None, memo: dict[tuple[int, ...], I64] | None = None) -> None:
        self._smpl = smpl
        self._vocab = vocab
        self._owner = owner  # the Model whose vocabulary this is (None: no prefilter)
        self.n_vocab = n_vocab
        # Tokens accepted since the grammar was opened, and the full-vocabulary answers
        # shared by this state and its clones, by (n, *path): the draft checks a position
        # of its proposal and the target verifies the same position with the same text.
        self._path: list[int] = path if path is not None else []
        self._memo: dict[tuple[int, ...], I64] = memo if memo is not None else {}
        self._buf = np.zeros(64, dtype=_TOKEN_DTYPE)
        self._arr = L.llama_token_data_array()
        self.full_checks = 0  # positions that needed the whole vocabulary (host cost)
        self.settled = 0  # positions whose cut was decided without it (grammar_cut)
        self.checked = 0  # tokens checked against the grammar
        self._refs: frozenset[int] = frozenset()  # ids the grammar names (<[id]>, <|name|>)
        # llama.cpp's time in this grammar and its clones (seconds, shared): an ambiguous
        # grammar keeps many parse stacks, each checked per token (quadratic in their number)
        self._spent: list[float] = [0.0]
        self._work: list[int] = [0]  # tokens checked by llama.cpp, shared the same way

    @classmethod
    def open(cls, vocab: Any, n_vocab: int, text: str, root: str = "root",
             owner: object = None) -> GrammarState:
        """A grammar over ``vocab``; ``owner`` (the Model that holds it) enables the
        full-vocabulary prefilter, whose table lives as long as the owner (not for a
        grammar with token references: those match a token by id, not by its text)."""
        if not text:
            raise GrammarError("The grammar is empty.")
        state = cls(init_sampler(vocab, text, root), n_vocab, vocab,
                    None if token_ref_marks(text) else owner)
        if vocab is not None:
            state._refs = referenced_ids(vocab, text)
        return state

    def clone(self) -> GrammarState:
        """An independent copy at the same position (a proposal branching off)."""
        if not self._smpl:
            raise GrammarError("grammar state used after close")
        twin = GrammarState(L.llama_sampler_clone(self._smpl), self.n_vocab, self._vocab,
                            self._owner, list(self._path), self._memo)
        twin._refs = self._refs
        twin._spent = self._spent
        twin._work = self._work
        return twin

    def close(self) -> None:
        if self._smpl:
            L.llama_sampler_free(self._smpl)
            self._smpl = None

    def allowed(self, ids: I64 | list[int]) -> Bools:
        """Which of ``ids`` the grammar admits next (EOG only once it is complete)."""
        ids = np.asarray(ids, dtype=np.int64)
        n = ids.shape[0]
        if n > self._buf.shape[0]:
            self._buf = np.zeros(max(n, 2 * self._buf.shape[0]), dtype=_TOKEN_DTYPE)
        buf = self._buf[:n]
        buf["id"] = ids
        buf["logit"] = 0.0
        self._arr.data = buf.ctypes.data_as(L.llama_token_data_p)
        self._arr.size = n
        self._arr.selected = -1
        self._arr.sorted = False
        start = time.perf_counter()
        L.llama_sampler_apply(self._smpl, ctypes.byref(self._arr))
        self._charge(time.perf_counter() - start, n)
        self.checked += n
        out: Bools = np.isfinite(buf["logit"])
        if self._refs:
            for i in np.flatnonzero(out & np.isin(ids, list(self._refs))):
                out[i] = self._named_token_safe(int(ids[i]))
        return out

    # What a reply's grammar may cost llama.cpp: this much, plus so much per token taken
    # and per token checked (a plain JSON grammar checks one in under 1 µs: a check of
    # Gemma's 262k-token vocabulary takes 0.18 s; an ambiguous grammar, with thousands of
    # parse stacks, takes hundreds of µs per token checked).
    TIME_BUDGET_S = 0.5
    TIME_PER_TOKEN_S = 0.02
    TIME_PER_CHECK_S = 10e-6

    def _charge(self, seconds: float, checked: int = 0) -> None:
        """Count llama.cpp's time; past the budget the reply ends with GrammarError (one
        hostile grammar costs the engine a bounded slice, then the next client is served)."""
        self._spent[0] += seconds
        self._work[0] += checked
        budget = (self.TIME_BUDGET_S + self.TIME_PER_TOKEN_S * len(self._path)
                  + self.TIME_PER_CHECK_S * self._work[0])
        if self._spent[0] > budget:
            raise GrammarBudgetError(
                f"{GRAMMAR_BUDGET_MESSAGE} {budget:.1f} s of engine time after "
                f"{len(self._path)} tokens (an ambiguous grammar keeps many parse states); "
                "make it simpler or less ambiguous.")

    def _named_token_safe(self, token: int) -> bool:
        """Whether accepting ``token``, a token the grammar names and admits here, is safe.

        llama.cpp (0c1e57098) also admits a named token where the grammar expects the
        first characters of its text and then the reference (``"<" <|im_start|>``: the
        token's '<' taken by the literal, the rest matched by id), and its accept, which
        consumes the text character by character, then throws through C: the process
        aborts. Accepting is safe when the grammar takes the token as a whole (no path
        here starts with its first character: the single-character token of that
        character is refused) or takes its whole text as characters (a walk over the
        single-character tokens of the text on a copy). Otherwise the two cannot be told
        apart through llama.cpp's API, and the token is treated as forbidden here: a
        grammar that allows both a named token and text starting with its first
        character at one position loses the named token there, which is narrower than
        llama.cpp's reading but never aborts."""
        text = piece_text(self._vocab, token)
        chars = [single_char_token(self._vocab, ch) for ch in text]
        if not chars or chars[0] is None:
            return False
        first = chars[0]
        if first == token or not self._admits(first):
            return True
        if any(c is None or c in self._refs for c in chars):
            return False
        walk = self.clone()
        try:
            for c in chars:
                assert c is not None
                if not walk._admits(c):
                    return False
                L.llama_sampler_accept(walk._smpl, c)
            return True
        finally:
            walk.close()

    def _admits(self, token: int) -> bool:
        """llama.cpp's own answer for one token (no named-token check)."""
        buf = np.zeros(1, dtype=_TOKEN_DTYPE)
        buf["id"] = token
        arr = L.llama_token_data_array(buf.ctypes.data_as(L.llama_token_data_p), 1, -1, False)
        L.llama_sampler_apply(self._smpl, ctypes.byref(arr))
        return bool(np.isfinite(buf["logit"][0]))

    def allows(self, token: int) -> bool:
        return bool(self.allowed([token])[0])

    def advance(self, token: int) -> None:
        """Move past ``token``. A token the grammar forbids would abort llama.cpp (it
        throws through C), so it is checked first and refused with GrammarError."""
        if not self.allows(token):
            raise GrammarError(f"token {token} is not allowed by the grammar here")
        start = time.perf_counter()
        L.llama_sampler_accept(self._smpl, token)
        self._charge(time.perf_counter() - start)
        self._path.append(token)

    def try_advance(self, token: int) -> bool:
        """Advance when allowed; False (state unchanged) otherwise."""
        if not self.allows(token):
            return False
        start = time.perf_counter()
        L.llama_sampler_accept(self._smpl, token)
        self._charge(time.perf_counter() - start)
        self._path.append(token)
        return True

    def allowed_top(self, logits: F32, need: int) -> I64:
        """Allowed ids among the best ``m`` by logit, for the smallest ``m`` in 1, 8, 64..
        (from ``need``) with at least ``need`` of them allowed; every allowed id when
        the whole vocabulary had to be checked. Empty when nothing is allowed."""
        n = logits.shape[0]
        m = max(1, need)
        while m < n // 4:
            top = np.argpartition(logits, n - m)[n - m :] if m > 1 else np.array([topk.argmax(logits)])
            top = top.astype(np.int64)
            ok = self.allowed(top)
            if int(ok.sum()) >= need:
                found: I64 = top[ok]
                return found
            m *= 8
        return self.allowed_all(n)

    def allowed_all(self, n: int) -> I64:
        """Every allowed id below ``n`` (a full-vocabulary check, remembered for this text)."""
        if self.MEMO_SIZE <= 0:
            return self._check_all(n)
        key = (n, *self._path)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        every = self._check_all(n)
        if len(self._memo) >= self.MEMO_SIZE:
            del self._memo[next(iter(self._memo))]
        self._memo[key] = every
        return every

    def _check_all(self, n: int) -> I64:
        self.full_checks += 1
        ids = np.arange(n, dtype=np.int64)
        if self.prefilter and self._owner is not None and n <= self.n_vocab:
            fb = FirstBytes.of(self._owner, self._vocab, self.n_vocab)
            byte_ok = np.zeros(257, dtype=bool)
            has = fb.single >= 0
            byte_ok[:256][has] = self.allowed(fb.single[has])
            ids = ids[fb.always[:n] | byte_ok[fb.first[:n]]]
        every: I64 = ids[self.allowed(ids)]
        return every

    def candidates(self, logits: F32, params: SamplingParams) -> tuple[I64, F64]:
        """The constrained distribution on its candidates (ids, probabilities), exactly
        ``sampling.candidates`` of the logits with every forbidden token at -inf."""
        n = logits.shape[0]
        k = params.top_k
        if not params.greedy and 0 < k < n:  # the k best allowed, or a cut settled early
            m = k
            while m < n // 4:
                top = np.argpartition(logits, n - m)[n - m :].astype(np.int64)
                found = top[self.allowed(top)]
                if found.shape[0] >= k:
                    return self._on(logits, found, params)
                kept = grammar_cut.settled(logits, found, k - found.shape[0],
                                           float(logits[top].min()), params)
                if kept is not None:
                    self.settled += 1
                    return self._on(logits, kept, _settled_params(params))
                m *= 8
            return self._on(logits, self.allowed_all(n), params)
        need = 1 if params.greedy else n
        return self._on(logits, self.allowed_top(logits, need), params)

    @staticmethod
    def _on(logits: F32, sub: I64, params: SamplingParams) -> tuple[I64, F64]:
        if sub.shape[0] == 0:
            raise GrammarError("The grammar admits no token here (it cannot be completed).")
        local, p = sampling.candidates(np.ascontiguousarray(logits[sub]), params)
        return sub[local], p


def _settled_params(params: SamplingParams) -> SamplingParams:
    """The same settings with top-k and top-p off (their cut is already made)."""
    return dataclasses.replace(params, top_k=0, top_p=1.0)


# -- patch points (looked up through this module at call time) ----------------------------


def target_candidates(state: GrammarState, logits: F32, params: SamplingParams) -> tuple[I64, F64]:
    """*Patch point*: the target's constrained candidates (greedy, coupled, sampling)."""
    return state.candidates(logits, params)


def target_probs(state: GrammarState, logits: F32, params: SamplingParams) -> F32:
    """The target's constrained p, dense, where it samples its own token (rejection rule)."""
    ids, p = target_candidates(state, logits, params)
    return sampling.densify(ids, p, logits.shape[0])


def verify_probs(state: GrammarState, logits: F32, params: SamplingParams) -> F32:
    """*Patch point*: the target's constrained p at a drafted position, where rejection
    sampling judges the draft token (one the grammar forbids has p = 0: always rejected)
    and samples the residual."""
    return target_probs(state, logits, params)


def draft_candidates(state: GrammarState, logits: F32, params: SamplingParams) -> tuple[I64, F64]:
    """*Patch point*: the draft's candidates, masked by the same grammar (raises acceptance;
    q stays the distribution the draft sampled from)."""
    return state.candidates(logits, params)
