"""The replay simulator's figures, test by test, for a before/after comparison of a policy
change (no timing: every figure comes from the scripted machines of
tests/core/engine/adaptive_sim.py, so two runs of one commit print the same numbers).

Run from the repository root:
    PYTHONPATH=app python -m specula_tools.lab.replay_figures
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from tests.core.engine import (
    test_adaptive_busy_machine as busy,
)
from tests.core.engine import (
    test_adaptive_lookup as lookup,
)
from tests.core.engine import (
    test_adaptive_real_traces as real,
)
from tests.core.engine import (
    test_adaptive_stop_loss as stop,
)
from tests.core.engine import (
    test_adaptive_unseen_traces as unseen,
)


def _r(x: float) -> float:
    return round(x, 4)


def main() -> None:
    out: dict[str, object] = {}
    got = unseen.adaptive_over_best_fixed()
    out["unseen: min over best fixed"] = _r(min(min(r) for r in got.values()))
    out["unseen: first replies over best fixed"] = {p: _r(r[0]) for p, r in got.items()}
    out["unseen: later median over best fixed"] = _r(unseen._later_median(got))
    got = unseen.adaptive_over_best_fixed(m=unseen.LONG_PROMPT)
    out["unseen long prompt: min"] = _r(min(min(r) for r in got.values()))
    out["unseen long prompt: later median"] = _r(unseen._later_median(got))
    rt = real._adaptive_over_best_fixed()
    out["real traces: min"] = _r(min(rt.values()))
    out["real traces: median"] = _r(statistics.median(rt.values()))
    with tempfile.TemporaryDirectory() as d:
        best = busy._best_fixed_quiet()
        after = busy._after_contention(Path(d))
    out["busy: quiet after contended, min rate over best fixed"] = _r(min(r for r, _ in after) / best)
    out["busy: quiet after contended, min accepted"] = min(a for _, a in after)
    for cal in (True, False):  # a steadily contended session, then a quiet one (after, fresh)
        with tempfile.TemporaryDirectory() as d:
            out[f"busy: quiet after steady contention, accepted (after, fresh), calibrate={cal}"] = (
                busy._quiet_after_steady(Path(d), cal))
    bad = lookup._over_plain_with_bad_lookup()
    out["compute-bound bad lookup: min over plain"] = _r(min(bad))
    out["compute-bound bad lookup: per reply"] = [_r(x) for x in bad]
    a = lookup._session(lookup._policy(lookup.Mode.ADAPTIVE, lookup.F16_EDIT), lookup.F16_EDIT, lookup.SEEDS)
    lk = lookup._session(lookup._policy(lookup.Mode.LOOKUP, lookup.F16_EDIT), lookup.F16_EDIT, lookup.SEEDS)
    ch = lookup._session(lookup.ChainPolicy(lookup.SpecConfig(mode=lookup.Mode.CHAIN, draft_max=3)),
                         lookup.F16_EDIT, lookup.SEEDS)
    out["edits: min over better of lookup and chain"] = _r(min(
        x.rate / max(y.rate, z.rate) for x, y, z in zip(a, lk, ch, strict=True)))
    ratio, steps = stop._over_plain(stop._trained_pair(), stop._hard_text())
    out["stop-loss: hard reply over plain"] = _r(ratio)
    out["stop-loss: hard reply draft steps"] = steps
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
