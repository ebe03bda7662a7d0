"""Logprobs as OpenAI reports them: the log-softmax of the target's logits.

Computed from the raw logits the target produced when it verified (or chose) the
token, with no repetition penalty, grammar mask or temperature applied: the
model's own belief, so a draft changes nothing but the float noise of the batch
shape it was verified in (docs/engine.md gives the measured size). Only computed
when a request asks for it (a full-vocabulary log-softmax per token).
"""

from __future__ import annotations

import numpy as np

from specula.core.engine.sampling.rules import F32


def token_logprobs(logits: F32, token: int, n_top: int) -> tuple[float, list[tuple[int, float]]]:
    """(logprob of ``token``, the ``n_top`` best (token id, logprob), best first)."""
    x = logits.astype(np.float64)
    mx = float(x.max())
    lse = mx + float(np.log(np.exp(x - mx).sum()))
    top: list[tuple[int, float]] = []
    if n_top > 0:
        n = x.shape[0]
        k = min(n_top, n)
        idx = np.argpartition(-x, k - 1)[:k] if k < n else np.arange(n)
        idx = idx[np.lexsort((idx, -x[idx]))]  # best first; ties by token id
        top = [(int(i), float(x[i] - lse)) for i in idx]
    return float(x[token] - lse), top
