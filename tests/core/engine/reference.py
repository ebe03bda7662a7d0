"""The independent reference for the exactness tests: what the target alone would sample.

Nothing here computes with the engine's code (``specula.core.engine``; only its
one-time llama.cpp log set-up is borrowed): the target's
logits come from a *fresh* llama.cpp context per prefix, opened through
llama-cpp-python's own low-level API and fed the whole prefix in one batch, and
the sampling transform is written again from llama.cpp's documentation
(``common/sampling`` default chain: top-k, then top-p, then min-p, then
temperature; top-p and min-p see the softmax of the logits as they are at that
point, i.e. at temperature 1). The joint law of the first n tokens of a reply is
the product of these conditionals along each prefix, enumerated over the
support (top-k keeps it small).

The chi-square p-value is the regularized upper incomplete gamma function,
computed here (scipy is not a dependency): a power series below a + 1 and
Lentz's continued fraction above (Numerical Recipes, 6.2); it is checked
against printed chi-square tables in ``test_sampling_exact.py``.
"""

from __future__ import annotations

import ctypes
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import llama_cpp as L
import numpy as np

EOG = -1  # a cell's last element when the reply ended with an end-of-generation token

Cell = tuple[int, ...]


@dataclass(frozen=True)
class Transform:
    """The sampling settings the reference applies (greedy is not a distribution here)."""

    temperature: float
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    min_p: float = 0.0  # 0 = off
    repeat_penalty: float = 1.0  # 1 = off; llama.cpp's penalties sampler, first in its chain
    repeat_last_n: int = 64


def penalize(logits: np.ndarray, history: Sequence[int], t: Transform) -> np.ndarray:
    """llama.cpp's repetition penalty: each distinct token of the last ``repeat_last_n``
    has its logit divided by the penalty when positive, multiplied when not."""
    x = np.array(logits, dtype=np.float64)
    if t.repeat_penalty == 1.0 or t.repeat_last_n <= 0:
        return x
    for tok in set(history[-t.repeat_last_n:]):
        if 0 <= tok < x.shape[0]:
            x[tok] = x[tok] / t.repeat_penalty if x[tok] > 0 else x[tok] * t.repeat_penalty
    return x


class CutTooClose(AssertionError):
    """A top-k / top-p / min-p boundary lies so close to its threshold that float noise
    between a batch of one and a verify batch could move it: choose another prompt."""


def transform(logits: np.ndarray, t: Transform, margin: float = 1e-4) -> dict[int, float]:
    """token -> probability under ``t``, from the raw logits, in float64.

    Raises :class:`CutTooClose` when a cut is decided by less than ``margin``
    (then the engine's float32 logits from another batch shape might decide it
    the other way and the support itself would differ).
    """
    x = np.asarray(logits, dtype=np.float64)
    order = sorted(range(x.shape[0]), key=lambda i: -x[i])  # descending, plain Python sort
    if t.top_k > 0 and t.top_k < len(order):
        if x[order[t.top_k - 1]] - x[order[t.top_k]] < margin:
            raise CutTooClose(f"top-k boundary gap {x[order[t.top_k - 1]] - x[order[t.top_k]]:.2e}")
        order = order[: t.top_k]

    def softmax(ids: list[int], temp: float) -> list[float]:
        m = max(x[i] for i in ids)
        e = [math.exp((x[i] - m) / temp) for i in ids]
        z = sum(e)
        return [v / z for v in e]

    if t.top_p < 1.0:
        p = softmax(order, 1.0)
        cum, keep = 0.0, len(order)
        for n, v in enumerate(p, start=1):
            cum += v
            if cum >= t.top_p:
                if cum - t.top_p < margin or (cum - v) >= t.top_p - margin:
                    raise CutTooClose(f"top-p boundary: cumulative {cum:.6f} vs {t.top_p}")
                keep = n
                break
        order = order[:keep]
    if t.min_p > 0.0:
        p = softmax(order, 1.0)
        bar = t.min_p * p[0]
        for v in p:
            if abs(v - bar) < margin * bar:
                raise CutTooClose(f"min-p boundary: {v:.6g} vs {bar:.6g}")
        order = [i for i, v in zip(order, p, strict=True) if v >= bar]
    return dict(zip(order, softmax(order, t.temperature), strict=True))


class FreshTarget:
    """The target model opened through llama-cpp-python directly; one new context per prefix."""

    def __init__(self, path: Path, n_ctx: int = 512) -> None:
        # The engine's one-time backend set-up, only so that llama.cpp's log goes through
        # Python logging rather than stderr; nothing else of the engine is used here.
        from specula.core.engine.native.backend import ensure_backend

        ensure_backend()
        mp = L.llama_model_default_params()
        self._model = L.llama_model_load_from_file(str(path).encode(), mp)
        assert self._model, f"cannot load {path}"
        self._vocab = L.llama_model_get_vocab(self._model)
        self.n_vocab = int(L.llama_vocab_n_tokens(self._vocab))
        self.n_ctx = n_ctx
        self._cache: dict[Cell, np.ndarray] = {}

    def is_eog(self, token: int) -> bool:
        return bool(L.llama_vocab_is_eog(self._vocab, token))

    def logits(self, prefix: Sequence[int]) -> np.ndarray:
        """Next-token logits after ``prefix``: a new context, the whole prefix in one batch."""
        key = tuple(prefix)
        if key in self._cache:
            return self._cache[key]
        cp = L.llama_context_default_params()
        cp.n_ctx = self.n_ctx
        cp.n_batch = max(len(prefix), 1)
        cp.n_ubatch = cp.n_batch
        cp.n_threads = cp.n_threads_batch = 1
        ctx = L.llama_init_from_model(self._model, cp)
        assert ctx, "cannot create a context"
        try:
            arr = (L.llama_token * len(prefix))(*prefix)
            rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, len(prefix)))
            assert rc == 0, f"llama_decode returned {rc}"
            ptr = L.llama_get_logits_ith(ctx, -1)
            out = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                        shape=(self.n_vocab,)).astype(np.float64)
        finally:
            L.llama_free(ctx)
        self._cache[key] = out
        return out

    def close(self) -> None:
        if self._model:
            L.llama_model_free(self._model)
            self._model = None


def exact_joint(target: FreshTarget, prompt: Sequence[int], t: Transform, n: int) -> dict[Cell, float]:
    """Law of the first ``n`` tokens of a reply: cell -> probability (a cell ends with EOG
    when the reply stops early; the EOG token itself is not part of the reply)."""
    out: dict[Cell, float] = {}

    def walk(prefix: Cell, prob: float) -> None:
        if len(prefix) == n:
            out[prefix] = out.get(prefix, 0.0) + prob
            return
        history = [*prompt, *prefix]
        for tok, pr in transform(penalize(target.logits(history), history, t), t).items():
            if target.is_eog(tok):
                cell = (*prefix, EOG)
                out[cell] = out.get(cell, 0.0) + prob * pr
            else:
                walk((*prefix, tok), prob * pr)

    walk((), 1.0)
    return out


def cell_of(token_ids: Sequence[int], n: int, stopped_at_eog: bool) -> Cell:
    """The cell a reply falls in (its first ``n`` tokens, EOG-terminated when it stopped early)."""
    head = tuple(int(t) for t in token_ids[:n])
    if len(head) < n:
        assert stopped_at_eog, f"reply of {len(head)} tokens < {n} without an EOG"
        return (*head, EOG)
    return head


def marginal(joint: Mapping[Cell, float], depth: int) -> dict[Cell, float]:
    out: dict[Cell, float] = {}
    for c, p in joint.items():
        out[c[:depth]] = out.get(c[:depth], 0.0) + p
    return out


# -- chi-square --------------------------------------------------------------


def chi2_sf(x2: float, dof: int) -> float:
    """P(X >= x2) for X ~ chi-square(dof): Q(dof / 2, x2 / 2)."""
    if x2 <= 0.0:
        return 1.0
    a, x = dof / 2.0, x2 / 2.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:  # series for P, Q = 1 - P
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # Lentz's continued fraction for Q
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(log_front) * h


@dataclass
class Chi2:
    statistic: float
    dof: int
    p_value: float
    n: int
    cells: int  # cells after pooling
    impossible: int  # samples in cells the target gives probability 0

    def __str__(self) -> str:
        return (f"chi2={self.statistic:.1f} dof={self.dof} p={self.p_value:.3g} "
                f"n={self.n} cells={self.cells} impossible={self.impossible}")


def chi2_test(observed: Counter[Cell], expected: Mapping[Cell, float], min_expected: float = 5.0) -> Chi2:
    """Pearson's goodness of fit; cells with an expected count below ``min_expected``
    are pooled (rarest first, until the pool itself reaches it). A sample the target
    can never produce makes the p-value 0."""
    n = sum(observed.values())
    impossible = sum(c for cell, c in observed.items() if expected.get(cell, 0.0) <= 0.0)
    if impossible:
        return Chi2(math.inf, 0, 0.0, n, 0, impossible)
    cells = sorted(expected, key=lambda c: expected[c], reverse=True)
    obs: list[float] = []
    exp: list[float] = []
    pool_o = pool_e = 0.0
    for c in cells:
        e = expected[c] * n
        if e >= min_expected:
            obs.append(observed.get(c, 0))
            exp.append(e)
        else:
            pool_o += observed.get(c, 0)
            pool_e += e
    if pool_e > 0.0:
        if pool_e < min_expected and exp:  # too small to stand alone: merge with the smallest cell
            obs[-1] += pool_o
            exp[-1] += pool_e
        else:
            obs.append(pool_o)
            exp.append(pool_e)
    x2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    dof = max(len(obs) - 1, 1)
    return Chi2(x2, dof, chi2_sf(x2, dof), n, len(obs), 0)
