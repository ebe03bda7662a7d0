"""The adaptive policy's models on disk, one JSON file per (target, draft, machine).

The file is a cache: what it holds makes the next session start at the right
draft shape, and anything that is not exactly what :func:`state_dict` writes is
discarded with a log line (the policy then starts from the calibration).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from specula.core import files, json_files
from specula.core.engine.policy.acceptance_model import DEPTHS, AcceptanceModel
from specula.core.engine.policy.cost_model import CostModel

log = logging.getLogger("specula.engine.adaptive")

VERSION = 1


def state_dict(cost: CostModel, acc: AcceptanceModel, shape_rate: dict[str, float]) -> dict[str, object]:
    return {
        "version": VERSION,
        "verify": {str(k): v for k, v in cost.verify.items()},
        "verify_n": {str(k): min(v, 20) for k, v in cost.verify_n.items()},
        "draft": cost.draft,
        "catchup_per_token": cost.catchup_per_token,
        "catchup_long_per_token": cost.catchup_long_per_token,
        "acc": {str(k): v for k, v in acc.acc.items()},
        "tot": {str(k): v for k, v in acc.tot.items()},
        "lookup_acc": {str(k): v for k, v in acc.lookup_acc.items()},
        "lookup_tot": {str(k): v for k, v in acc.lookup_tot.items()},
        "first_rate": acc.first_rate,
        "rate_acc": acc.rate_acc,
        "rate_judged": acc.rate_judged,
        "depth_acc": list(acc.depth_acc),
        "depth_judged": list(acc.depth_judged),
        "shape_rate": shape_rate,
    }


def load_into(path: Path, cost: CostModel, acc: AcceptanceModel) -> tuple[dict[str, float], str] | None:
    """Fill ``cost`` and ``acc`` from the file; the saved shape rates and governor phase
    ("" when none was saved), or None when nothing was loaded (no file, another version,
    or a bad file: logged, untouched)."""
    try:
        state = _checked_state(json_files.read(json_files.JsonFile(path, "policy state")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("discarding bad policy state %s: %s", path, exc)
        return None
    if state is None:
        return None
    (cost.verify, cost.verify_n, cost.draft, cost.catchup_per_token,
     acc.acc, acc.tot, acc.lookup_acc, acc.lookup_tot, acc.first_rate, acc.rate_acc,
     acc.rate_judged, acc.depth_acc, acc.depth_judged, shape_rate, cost.catchup_long_per_token,
     phase) = state
    return shape_rate, phase


def save(path: Path, state: dict[str, object]) -> None:
    """Write atomically (a reader never sees half a file); a failure is logged, not raised."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.atomic_write_json(path, state)
    except OSError as exc:
        log.warning("could not save policy state %s: %s", path, exc)


_State = tuple[dict[int, float], dict[int, int], float | None, float | None, dict[int, float],
               dict[int, float], dict[int, float], dict[int, float], float, float, float,
               list[float], list[float], dict[str, float], float | None, str]


def _checked_state(d: object) -> _State | None:
    """The saved state as typed values, or None for another version; raises on anything
    else (a list, text where a time belongs, NaN, a negative count)."""
    if not isinstance(d, dict):
        raise TypeError(f"expected a JSON object, found {type(d).__name__}")
    if d.get("version") != VERSION:
        return None

    def num(v: object, what: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{what} = {v!r} is not a non-negative number")
        return float(v)

    def table(key: str) -> dict[int, float]:
        t = d[key]
        if not isinstance(t, dict):
            raise TypeError(f"{key} is not an object")
        return {int(k): num(v, key) for k, v in t.items()}

    def depths(key: str) -> list[float]:
        t = d.get(key, [0.0] * DEPTHS)
        if not isinstance(t, list) or len(t) != DEPTHS:
            raise TypeError(f"{key} is not a list of {DEPTHS} numbers")
        return [num(v, key) for v in t]

    def optional(key: str) -> float | None:
        return None if d[key] is None else num(d[key], key)

    # The long catch-up rate came later: a file without it keeps the rest.
    long = None if d.get("catchup_long_per_token") is None else num(d["catchup_long_per_token"], "catchup_long_per_token")

    first_rate = num(d["first_rate"], "first_rate")
    if first_rate > 1.0:
        raise ValueError(f"first_rate = {first_rate} is not a probability")
    # The per-token rate came later: a file without it keeps its costs and starts the rate anew.
    rate_acc = num(d.get("rate_acc", 0.0), "rate_acc")
    rate_judged = num(d.get("rate_judged", 0.0), "rate_judged")
    if rate_acc > rate_judged:
        raise ValueError(f"rate_acc = {rate_acc} exceeds rate_judged = {rate_judged}")
    depth_acc, depth_judged = depths("depth_acc"), depths("depth_judged")
    if any(x > y for x, y in zip(depth_acc, depth_judged, strict=True)):
        raise ValueError("depth_acc exceeds depth_judged")
    shapes = d.get("shape_rate", {})
    if not isinstance(shapes, dict):
        raise TypeError("shape_rate is not an object")
    phase = d.get("phase", "")
    if not isinstance(phase, str):
        raise TypeError("phase is not a string")
    return (table("verify"), {k: int(v) for k, v in table("verify_n").items()},
            optional("draft"), optional("catchup_per_token"), table("acc"), table("tot"),
            table("lookup_acc"), table("lookup_tot"), first_rate, rate_acc, rate_judged,
            depth_acc, depth_judged, {str(k): num(v, "shape_rate") for k, v in shapes.items()}, long,
            phase)
