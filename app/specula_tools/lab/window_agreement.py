"""The draft's agreement with the target when it reads only a window of the prompt.

Reads an ``agreement_trace --windows`` JSON and prints, per prompt, the share of the
target's reply tokens the draft's greedy choice gets right (the true prefix before each)
with the whole prompt and with each window (the prompt's first tokens and its last W),
over the reply's first PROBE tokens (what a probe's few draft steps meet) and over all of
it; then the mean over prompts.

    PYTHONPATH=app python -m specula_tools.lab.window_agreement TRACES.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PROBE = 12  # a probe's three draft steps meet about this many positions


def share(ok: list[bool], n: int | None = None) -> float:
    part = ok[:n] if n else ok
    return sum(bool(x) for x in part) / max(len(part), 1)


def main(path: str) -> None:
    traces = json.loads(Path(path).read_text("utf-8"))
    windows = sorted({int(w) for t in traces.values() for w in t.get("window_ok", {})})
    cols = ["whole", *(f"W={w}" for w in windows)]
    print(f"{'prompt':24} " + " ".join(f"{c:>13}" for c in cols))
    print(f"{'':24} " + " ".join(f"{'first12 / all':>13}" for _ in cols))
    sums = [[0.0, 0.0] for _ in cols]
    for pid, t in traces.items():
        rows = [t["ok"], *(t["window_ok"][str(w)] for w in windows)]
        cells = []
        for i, ok in enumerate(rows):
            a, b = share(ok, PROBE), share(ok)
            sums[i][0] += a
            sums[i][1] += b
            cells.append(f"{a:5.2f} / {b:4.2f}")
        print(f"{pid:24} " + " ".join(f"{c:>13}" for c in cells))
    n = max(len(traces), 1)
    print(f"{'mean':24} " + " ".join(f"{s[0] / n:5.2f} / {s[1] / n:4.2f}".rjust(13) for s in sums))


if __name__ == "__main__":
    main(sys.argv[1])
