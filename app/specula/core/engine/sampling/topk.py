"""Partial selection over a vocabulary-sized logit row, in time that grows with the
candidates rather than with the vocabulary.

With a 152k-token vocabulary and a GPU step of a few milliseconds, a full-vocabulary
``np.argpartition`` or softmax per position is a large share of each step. Everything
here reads the row a couple of times with vectorised reductions and then works on a few
thousand values at most:

* :func:`top_k_ids`: the k largest logits, exactly, ordered by logit (ties: the lower
  token id first, as a stable sort of the whole vocabulary would order them). The
  vocabulary is cut into B strided groups (token i is in group i mod G); the group
  maxima are one elementwise ``np.maximum`` over B rows. The k-th largest group maximum
  t is at most the k-th largest logit (k distinct tokens reach t), so every top-k token
  is at least t and lies in a group whose maximum is at least t: only those groups are
  looked at.
* :func:`softmax_stats`: argmax, its probability and the entropy of the plain softmax,
  exactly, with one exp over the row and dot products (numpy's float32 ``sum`` is
  several times slower than a dot with ones).
* :func:`top_softmax_stats`: the same features from the top 64 tokens and a strided
  estimate of the rest, sharing the row's selection with the sampling transform.
* :func:`top_k_lists`: the same selection as Python lists with the logits, for the
  sampling transform on the candidates.
* :func:`top2_gap`: the gap between the two largest logits from two max reductions.

* :func:`argmax`: the row's argmax without the copy numpy makes of a read-only row.

Array methods (``a.nonzero()[0]``, ``a.cumsum()``, a copy's ``partition``) rather than
numpy's module functions, here and in sampling/rules.py: the functions are Python wrappers
around the same methods, and right after a decode each wrapper costs several
microseconds of cache misses (docs/lab/2026-12-01-host-work.md, "Where a step's host time
goes").
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

# ndarray.max and .sum are Python functions (numpy/_core/_methods.py) around these
# ufunc reductions: the reductions themselves skip a frame that is cold after a decode
_MAX = np.maximum.reduce
_SUM = np.add.reduce

GROUP_ROWS = 32  # B: rows of the strided group layout (G = n // B groups of B tokens)
_SMALL = 4096  # rows shorter than this are sorted whole


def _stable_top(ids: I64, vals: npt.NDArray[np.floating], k: int) -> I64:
    """The k best of (ids ascending, vals) by value, ties to the lower id."""
    if ids.shape[0] > 4 * k:  # many ties at the threshold: cut before sorting
        part = vals.copy()
        part.partition(ids.shape[0] - k)
        kth = part[ids.shape[0] - k]
        above = vals > kth
        n_above = int(np.count_nonzero(above))
        ties = (vals == kth).nonzero()[0][: k - n_above]
        keep = above.nonzero()[0]
        sel = np.concatenate((keep, ties)) if ties.shape[0] else keep
        ids, vals = ids[sel], vals[sel]
    order = np.lexsort((ids, -vals))[:k]  # last key first: by -value, then by id
    out: I64 = ids[order]
    return out


# The last selection made on a read-only row (llama.cpp's logits as Context.logits gives
# them): the draft's confidence features and its sampling transform read the same row one
# after the other, and share one selection. A read-only row cannot change under the same
# array object, and a new decode gives new objects; a writable array is never remembered.
_last: tuple[F32, int, I64] | None = None


def top_k_ids(logits: F32, k: int) -> I64:
    """Token ids of the ``k`` largest logits, best first, ties to the lower id.

    Exactly what ``np.argsort(-logits, kind="stable")[:k]`` gives, without sorting or
    partitioning the whole row.
    """
    global _last
    n = logits.shape[0]
    k = max(0, min(k, n))
    if k == 0:
        return np.empty(0, dtype=np.int64)
    last = _last
    if last is not None and last[0] is logits and k <= last[1]:
        return last[2][:k]
    out = _top_k_ids(logits, k)
    out.flags.writeable = False  # it may be handed out again
    if not logits.flags.writeable:
        _last = (logits, k, out)
    return out


_LAYOUTS: dict[int, tuple[int, I64, I64]] = {}


def _layout(n: int) -> tuple[int, I64, I64]:
    """(groups G, row offsets r*G as a column, the tail ids) for a row of ``n``, made once."""
    lay = _LAYOUTS.get(n)
    if lay is None:
        groups = n // GROUP_ROWS
        offsets = (np.arange(GROUP_ROWS, dtype=np.int64) * groups)[:, None]
        lay = _LAYOUTS[n] = (groups, offsets, np.arange(groups * GROUP_ROWS, n, dtype=np.int64))
    return lay


def _top_k_ids(logits: F32, k: int) -> I64:
    n = logits.shape[0]
    if n <= _SMALL or k * GROUP_ROWS * 4 >= n:
        order: I64 = (-logits).argsort(kind="stable")[:k].astype(np.int64)
        return order
    ids, vals = _at_or_above_kth_group_max(logits, k)
    return _stable_top(ids, vals, k)


def _at_or_above_kth_group_max(logits: F32, k: int) -> tuple[I64, F32]:
    """(ids ascending, their logits): every token at or above the k-th largest group
    maximum, a superset of the top k (see the module's docstring)."""
    groups, offsets, tail = _layout(logits.shape[0])
    head = logits[: groups * GROUP_ROWS].reshape(GROUP_ROWS, groups)  # row r: ids r*G .. r*G+G-1
    gmax = _MAX(head, axis=0)  # group g = {g, g + G, g + 2G, ...}
    part = gmax.copy()  # gmax keeps its order: partition a copy
    part.partition(groups - k)
    t = part[groups - k]
    ids = ((gmax >= t).nonzero()[0][None, :] + offsets).ravel()
    if tail.shape[0]:  # the last n mod B ids are always looked at
        ids = np.concatenate((ids, tail))
    vals = logits[ids]  # ids ascend: row r holds r*G + g, and the tail comes last
    keep = (vals >= t).nonzero()[0]
    return ids[keep], vals[keep]


LIST_SORT_MAX = 256  # candidates sorted as Python tuples up to this many (more: numpy)


def top_k_lists(logits: F32, k: int) -> tuple[list[int], list[float]]:
    """:func:`top_k_ids` and their logits as Python lists (ids best first, ties to the
    lower id), for the sampling transform on a few candidates: right after a decode a
    Python sort of some 40 (value, id) pairs and float arithmetic on them cost less than
    the dozen small numpy calls that would do the same on arrays."""
    n = logits.shape[0]
    k = max(0, min(k, n))
    last = _last
    if k == 0:
        return [], []
    if (last is not None and last[0] is logits and k <= last[1]) or n <= _SMALL \
            or k * GROUP_ROWS * 4 >= n:
        ids = top_k_ids(logits, k)
        return ids.tolist(), logits[ids].tolist()
    cand, vals = _at_or_above_kth_group_max(logits, k)
    if cand.shape[0] > LIST_SORT_MAX:  # many ties at the threshold
        ids = _stable_top(cand, vals, k)
        return ids.tolist(), logits[ids].tolist()
    neg: list[float] = (-vals).tolist()
    cl: list[int] = cand.tolist()
    # Python's sort is stable and ``cand`` ascends, so equal logits keep the lower id
    # first; a float key compares faster than (value, id) tuples
    order = sorted(range(len(neg)), key=neg.__getitem__)[:k]
    return [cl[i] for i in order], [-neg[i] for i in order]


def argmax(row: F32) -> int:
    """``int(row.argmax())``, without numpy copying a read-only row first.

    numpy's argmax asks for a writeable array (``NPY_ARRAY_DEFAULT``), so on a read-only
    one, which is what ``Context.logits`` hands out, it first copies the whole row:
    with a 152k vocabulary right after a decode that copy is most of the time (28-32 us
    against 12 us; docs/lab/2026-12-01-host-work.md, "The argmax of a read-only row").
    A writeable alias of the same memory, made here and only read, skips it; a row whose memory
    may not be written (a frozen copy) takes numpy's own path.
    """
    if row.flags.writeable:
        return int(row.argmax())
    alias = row.view()
    try:
        alias.flags.writeable = True
    except ValueError:
        return int(row.argmax())
    return int(alias.argmax())


FEATURE_K = 64  # tokens whose probabilities the draft's confidence features take exactly
FEATURE_STRIDE = 16  # the rest of the vocabulary is estimated from every 16th token


def softmax_stats(logits: F32) -> tuple[int, float, float]:
    """(argmax, its probability, entropy in nats) of the plain softmax of the row, exact.

    Right after a decode this costs about what :func:`top_softmax_stats` does (both
    read the row about once); it is the one for greedy drafting, where no selection
    follows to share."""
    top = argmax(logits)
    x = logits - logits[top]
    e = np.exp(x)
    z = float(np.dot(e, _ones(e.shape[0], e.dtype)))
    return top, 1.0 / z, max(float(np.log(z) - float(np.dot(e, x)) / z), 0.0)


def top_softmax_stats(logits: F32) -> tuple[int, float, float]:
    """:func:`softmax_stats` from the top candidates, for a sampled reply's drafting.

    Rows up to a few thousand tokens are computed exactly. For a large vocabulary the
    ``FEATURE_K`` most likely tokens are taken exactly (one partial selection, shared
    with the sampling transform that follows on the same row) and the other tokens'
    part of the normaliser and of the entropy is estimated from every
    ``FEATURE_STRIDE``-th token, scaled to the number of tokens it stands for: where the
    draft is confident the top tokens hold nearly all the mass and the estimate is
    close to exact; where it is flat the sample of ~10k values is a good estimate of a
    sum of many small terms. These are features for a drafting policy (the output's
    exactness never depends on them), in the spirit of llama.cpp's draft loop, which
    reads its confidence from a top-k of the draft's logits.
    """
    if logits.shape[0] <= _SMALL:
        return _exact_stats(logits)
    ids = top_k_ids(logits, FEATURE_K)
    top = int(ids[0])
    z, ex = normaliser(logits, ids)
    entropy = float(np.log(z) - ex / z)  # H = log z - sum(p * x), x = logit - max
    return top, 1.0 / z, max(entropy, 0.0)


def normaliser(logits: F32, ids: I64) -> tuple[float, float]:
    """(z, sum of exp(x) * x) over the row, x = logit - max, with ``ids`` (the top
    tokens, best first) taken exactly and the rest estimated from a strided sample
    (see :func:`top_softmax_stats`). Few numpy calls: after a decode each one is slow."""
    n = logits.shape[0]
    m = float(logits[int(ids[0])])
    if n <= _SMALL:  # small rows: every token exactly
        x = logits.astype(np.float64) - m
        e = np.exp(x)
        return float(e.sum()), float(np.dot(e, x))
    xt = logits[ids].astype(np.float64) - m
    et = np.exp(xt)
    z, ex = float(_SUM(et, axis=None)), float(np.dot(et, xt))
    xs = logits[::FEATURE_STRIDE] - np.float32(m)  # a copy: the top tokens are zeroed in it
    pos = ids[ids % FEATURE_STRIDE == 0] // FEATURE_STRIDE  # top tokens the sample holds
    xs[pos] = np.float32(-1e30)  # counted exactly above: exp gives 0, and 0 * -1e30 is 0
    es = np.exp(xs)
    n_rest = xs.shape[0] - pos.shape[0]
    if n_rest > 0:
        scale = (n - ids.shape[0]) / n_rest
        z += float(np.dot(es, _ones(es.shape[0], es.dtype))) * scale
        ex += float(np.dot(es, xs)) * scale
    return z, ex


def _exact_stats(logits: F32) -> tuple[int, float, float]:
    top = argmax(logits)
    x = logits.astype(np.float64) - float(logits[top])
    e = np.exp(x)
    z = float(e.sum())
    return top, 1.0 / z, max(float(np.log(z) - float(np.dot(e, x)) / z), 0.0)


_ONES: dict[tuple[int, str], npt.NDArray[np.floating]] = {}


def _ones(n: int, dtype: np.dtype[np.floating]) -> npt.NDArray[np.floating]:
    key = (n, dtype.str)
    v = _ONES.get(key)
    if v is None:
        v = _ONES[key] = np.ones(n, dtype=dtype)
    return v


def top2_gap(logits: F32) -> float:
    """Difference between the two largest logits (small = a near-tie)."""
    if logits.shape[0] < 2:
        return float("inf")
    i = argmax(logits)
    rest = max(float(logits[:i].max()) if i else -np.inf,
               float(logits[i + 1 :].max()) if i + 1 < logits.shape[0] else -np.inf)
    return float(logits[i]) - rest
