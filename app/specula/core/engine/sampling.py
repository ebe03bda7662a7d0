"""Sampling settings, logits -> probabilities, and the exact acceptance rules.

The target's p and the draft's q must go through the *same* transform
(temperature, top-k, top-p, min-p) for rejection sampling to keep the target's
distribution; :func:`probs` is that one transform.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


@dataclass
class SamplingParams:
    """Generation settings. ``temperature <= 0`` means greedy (argmax)."""

    temperature: float = 0.0
    top_k: int = 40  # 0 = off
    top_p: float = 0.95  # 1 = off
    min_p: float = 0.05  # 0 = off
    repeat_penalty: float = 1.0  # 1 = off; otherwise acceptance falls back to sample-and-match
    repeat_last_n: int = 64
    seed: int | None = None
    max_tokens: int = 512
    stop: list[str] = field(default_factory=list)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @property
    def has_penalties(self) -> bool:
        """Settings that depend on the history, which rejection sampling cannot express."""
        return self.repeat_penalty != 1.0

    @property
    def acceptance_rule(self) -> str:
        if self.greedy:
            return "greedy"
        return "sample-and-match" if self.has_penalties else "rejection-sampling"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def apply_penalties(logits: F32, history: list[int], params: SamplingParams) -> F32:
    """llama.cpp-style repetition penalty over the last ``repeat_last_n`` tokens (a copy)."""
    if not params.has_penalties or not history:
        return logits
    out: F32 = logits.copy()
    recent = np.unique(np.asarray(history[-params.repeat_last_n :], dtype=np.int64))
    recent = recent[recent < out.shape[0]]
    vals = out[recent]
    out[recent] = np.where(vals > 0, vals / params.repeat_penalty, vals * params.repeat_penalty)
    return out


def probs(logits: F32, params: SamplingParams) -> F32:
    """The sampling distribution for ``logits`` under ``params`` (sums to 1).

    Order as llama.cpp's default chain: top-k, top-p, min-p, then temperature.
    Greedy gives a one-hot vector at the argmax.
    """
    n = logits.shape[0]
    if params.greedy:
        out = np.zeros(n, dtype=np.float32)
        out[int(np.argmax(logits))] = 1.0
        return out
    # Work on the candidates only: top-k first keeps every later step cheap.
    if 0 < params.top_k < n:
        idx = np.argpartition(logits, n - params.top_k)[n - params.top_k :]
    else:
        idx = np.arange(n)
    xs = logits[idx].astype(np.float64)
    e = np.exp(xs - xs.max())
    p = e / e.sum()
    if params.top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        cut = int(np.searchsorted(np.cumsum(p[order]), params.top_p)) + 1
        sel = order[:cut]
        idx, xs, p = idx[sel], xs[sel], p[sel]
    if params.min_p > 0.0:
        sel = p >= params.min_p * p.max()
        idx, xs = idx[sel], xs[sel]
    t = xs / params.temperature
    e = np.exp(t - t.max())
    out = np.zeros(n, dtype=np.float32)
    out[idx] = e / e.sum()
    return out


def sample(p: F32, rng: np.random.Generator) -> int:
    """One draw from ``p`` (inverse CDF; robust to float rounding)."""
    c = np.cumsum(p, dtype=np.float64)
    u = rng.random() * c[-1]
    return int(min(np.searchsorted(c, u, side="right"), p.shape[0] - 1))


def residual(p: F32, q: F32) -> F32:
    """normalize(max(0, p - q)): where to sample after a rejected draft token."""
    r = np.maximum(p.astype(np.float64) - q.astype(np.float64), 0.0)
    s = r.sum()
    if s <= 0.0:  # p == q: a rejection had probability 0; p itself is the answer
        return p
    res: F32 = (r / s).astype(np.float32)
    return res


def accept_draft_token(p: F32, q: F32, token: int, rng: np.random.Generator) -> bool:
    """Leviathan et al.: accept a token drawn from q with probability min(1, p/q)."""
    qt = float(q[token])
    if qt <= 0.0:
        return False
    return bool(rng.random() < min(1.0, float(p[token]) / qt))
