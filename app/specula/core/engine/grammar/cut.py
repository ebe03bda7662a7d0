"""Deciding a constrained top-p / min-p cut without checking the whole vocabulary.

Sampling with top-k k needs the k best allowed tokens; at a structural position of a
JSON grammar fewer than k are allowed at all, and proving that takes a pass over the
whole vocabulary. It is not needed when the cut is decided anyway: if the best ``m``
tokens by logit were checked and ``a < k`` of them are allowed, any other allowed
token has a logit of at most ``ceiling`` (the m-th best), and at most ``k - a`` of them
can join the top-k set. Their mass at temperature 1 lies in [0, (k - a) e^ceiling], so

* top-p: when the cut lands on the same allowed token for both extremes of that mass,
  every unknown token lies beyond it (they come last in the order) and is dropped;
* min-p alone (top-p off): an unknown token survives only with a logit of at least
  best + ln(min_p) (min-p compares with the best, whatever the normalization), so
  a ceiling below that drops them all.

Then the kept tokens are exactly the constrained distribution's, and min-p and the
temperature see only them (``sampling.candidates`` with top-k and top-p off). When
neither holds the caller checks the whole vocabulary.
"""

from __future__ import annotations

import math

import numpy as np

from specula.core.engine.sampling.rules import F32, I64, SamplingParams

MARGIN = 1e-6  # relative: a cut this close to its threshold is left to the full check


def settled(logits: F32, found: I64, n_unknown: int, ceiling: float,
            params: SamplingParams) -> I64 | None:
    """The allowed ids the top-k / top-p / min-p cut keeps, or None when unknown tokens
    (at most ``n_unknown``, each with a logit <= ``ceiling``) could change it."""
    if found.shape[0] == 0 or params.greedy:
        return None
    x = logits[found].astype(np.float64)
    order = np.argsort(-x, kind="stable")
    x = x[order]
    best = float(x[0])
    if params.top_p < 1.0:
        e = np.exp(x - best)
        c = np.cumsum(e)
        z_found = float(c[-1])
        z_rest = n_unknown * math.exp(ceiling - best)
        # the cut index is smallest with the least mass (and a lower threshold), largest
        # with the most: when both agree, every possible total gives the same cut
        lo = int(np.searchsorted(c / z_found, params.top_p * (1.0 - MARGIN)))
        hi = int(np.searchsorted(c / (z_found + z_rest), params.top_p * (1.0 + MARGIN)))
        if lo != hi or hi >= found.shape[0]:
            return None
        kept: I64 = found[order[: lo + 1]]
        return kept
    if params.min_p > 0.0 and ceiling - best < math.log(params.min_p) - MARGIN:
        return found
    return None
