"""What each host operation on one logits row costs, right after a decode and hot.

On the 152k-vocabulary proxy (:mod:`specula_tools.vocab_proxy`) every operation is timed
on the row that a one-token decode has just written (the decode streams the weights
through the caches, so this is the cost inside a real step) and again in a tight loop
on a copy (caches warm: closer to a GPU, whose decode leaves the CPU caches alone).

    python -m specula_tools.host_costs [FOLDER]
"""

from __future__ import annotations

import functools
import statistics
import time
import timeit
from collections.abc import Callable

import numpy as np

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula_tools.cli import folder_argument
from specula_tools.vocab_proxy import DEFAULT_FOLDER, build_proxy

SAMPLED = sampling.SamplingParams(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05)


def _old_features(row: np.ndarray) -> tuple[int, float, float]:
    """The full-vocabulary softmax features as computed before (exp and dot over the row)."""
    top = int(np.argmax(row))
    x = row - row[top]
    e = np.exp(x)
    z = float(e.sum())
    return top, 1.0 / z, float(np.log(z) - float(np.dot(e, x)) / z)


OPS: dict[str, Callable[[np.ndarray], object]] = {
    "np.argmax (greedy)": np.argmax,
    "np.argpartition top-40 (before)": lambda r: np.argpartition(r, r.shape[0] - 40),
    "topk.top_k_ids top-40": lambda r: topk._top_k_ids(r, 40),
    "sampling.candidates T 0.8": lambda r: sampling.candidates(r, SAMPLED),
    "full softmax features (before)": _old_features,
    "softmax features, exact (greedy)": topk.softmax_stats,
    "softmax features, top 64 (sampled)": topk.top_softmax_stats,
}


def main(folder: str | None = None) -> None:
    target, _ = build_proxy(folder or DEFAULT_FOLDER)
    model = Model(target)
    ctx = Context(model, n_ctx=2048, n_threads=1)
    batch = Batch(8, 1)
    names = list(OPS)
    cold: dict[str, list[float]] = {k: [] for k in names}
    for i in range(60 * len(names)):
        batch.fill([5 + i % 7], i, outputs="last")
        ctx.decode(batch)
        row = ctx.logits(-1)
        name = names[i % len(names)]
        t0 = time.perf_counter()
        OPS[name](row)
        cold[name].append(time.perf_counter() - t0)
    hot_row = np.array(ctx.logits(-1))  # writable: no remembered selection between repeats
    print(f"{'operation':<34}{'after a decode':>16}{'hot':>10}   (us, median; vocabulary {model.n_vocab})")
    for name in names:
        op = OPS[name]
        hot = min(timeit.repeat(functools.partial(op, hot_row), number=100, repeat=5)) / 100
        print(f"{name:<34}{statistics.median(cold[name]) * 1e6:>16.1f}{hot * 1e6:>10.1f}")


if __name__ == "__main__":
    main(folder_argument(__doc__, None, "the proxy folder (default: vocab_proxy's)"))
