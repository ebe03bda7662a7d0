"""Specula beside llama.cpp's own server: what one streamed reply measured, and the
per-prompt table with its ratios (``specula_tools.peer_bench`` runs the servers).

Every side is a server answering the same streamed chat request, so decode speed
is each server's own figure with one definition: tokens after the first over
the time after the first (llama-server's ``timings.predicted_per_second``,
Specula's ``specula.tokens_per_s``). TTFT and wall time are the client's. A ratio
of two sides is taken within each repeat (the sides of a repeat run back to back),
then its median over repeats; the best setting of a kind (llama-server's draft
lengths, Specula's chains) is the one with the highest median rate.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

PEER_PLAIN = "llama-server"  # the reference column: llama.cpp's server without a draft


@dataclass
class PeerRun:
    """One streamed reply of one side (a server and its settings) to one prompt."""

    side: str  # "llama-server", "llama-server draft:3", "specula adaptive", ...
    prompt_id: str
    repeat: int
    text: str
    tokens: int  # tokens the server says it generated
    decode_tok_s: float  # the server's own: tokens after the first / time after the first
    ttft_s: float  # the client's: request sent -> first content
    wall_s: float  # the client's: request sent -> stream closed
    drafted: int = 0
    accepted: int = 0
    # the server's own statistics as it sent them (Specula's ``specula`` block: steps,
    # drafting steps, per-position counters, draft and verify time; llama-server's
    # ``timings``): kept in the JSON to tell afterwards how a side spent its time
    detail: dict[str, object] = field(default_factory=dict)

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None


def read_stream(lines: Iterable[bytes | str], sent: float, clock: Iterable[float],
                side: str, prompt_id: str, repeat: int) -> PeerRun:
    """A PeerRun from a server-sent-event stream (OpenAI chat chunks; llama-server's
    ``timings`` or Specula's ``specula`` statistics in a late chunk). ``clock`` yields the
    time each line arrived (``time.perf_counter`` readings, the same clock as ``sent``)."""
    text: list[str] = []
    first: float | None = None
    last = sent
    stats: dict[str, object] = {}
    for raw, now in zip(lines, clock, strict=False):
        line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        line = line.strip()
        last = now
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if "error" in chunk:
            raise ValueError(f"{side}: the server answered an error: {chunk['error']}")
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece:
                text.append(piece)
                if first is None:
                    first = now
        for key in ("timings", "specula"):
            if isinstance(chunk.get(key), dict):
                stats[key] = chunk[key]
    return _run(side, prompt_id, repeat, "".join(text), stats, sent, first, last)


def _num(d: object, key: str) -> float:
    v = d.get(key, 0) if isinstance(d, dict) else 0
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


# Where each server puts its statistics, and its names for (tokens, tok/s, drafted, accepted).
_STATS_FIELDS = {
    "specula": ("tokens", "tokens_per_s", "drafted", "accepted"),
    "timings": ("predicted_n", "predicted_per_second", "draft_n", "draft_n_accepted"),
}


def _run(side: str, prompt_id: str, repeat: int, text: str, stats: dict[str, object],
         sent: float, first: float | None, last: float) -> PeerRun:
    key = next((k for k in _STATS_FIELDS if k in stats), None)
    if key is None:
        raise ValueError(f"{side}: the stream carried no timings (is this llama-server or specula serve?)")
    s = stats[key]
    n, r, d, a = _STATS_FIELDS[key]
    return PeerRun(side, prompt_id, repeat, text, int(_num(s, n)), _num(s, r),
                   (first if first is not None else last) - sent, last - sent,
                   int(_num(s, d)), int(_num(s, a)), dict(s) if isinstance(s, dict) else {})


def _paired_median(num: dict[int, float], den: dict[int, float]) -> float | None:
    """The median over the repeats both ran of num / den (None: no such repeat)."""
    paired = [num[r] / den[r] for r in num.keys() & den.keys() if den[r] > 0]
    return float(statistics.median(paired)) if paired else None


@dataclass
class PeerRow:
    """One prompt: the median over repeats of each side's figures, and its ratios."""

    prompt_id: str
    decode: dict[str, float] = field(default_factory=dict)  # side -> decode tok/s
    ttft: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    acceptance: dict[str, float | None] = field(default_factory=dict)
    identical: dict[str, bool] = field(default_factory=dict)  # side -> same text as the reference
    by_repeat: dict[str, dict[int, float]] = field(default_factory=dict)  # side -> repeat -> tok/s
    wall_by_repeat: dict[str, dict[int, float]] = field(default_factory=dict)  # side -> repeat -> s

    def ratio(self, side: str, over: str = PEER_PLAIN) -> float:
        """``side``'s decode rate over ``over``'s: the median of the ratios within each
        repeat both ran (a repeat's sides run back to back, so a slow minute of a busy
        machine slows both sides of a ratio), else the ratio of the medians."""
        mine, theirs = self.by_repeat.get(side, {}), self.by_repeat.get(over, {})
        paired = [mine[r] / theirs[r] for r in mine.keys() & theirs.keys() if theirs[r] > 0]
        if paired:
            return float(statistics.median(paired))
        base = self.decode.get(over, 0.0)
        return self.decode.get(side, 0.0) / base if base > 0 else 0.0

    def wall_ratio(self, side: str, over: str) -> float:
        """How much sooner ``side``'s whole reply was done than ``over``'s (their wall time
        over its own), paired within each repeat as :meth:`ratio` is. Whole replies count
        every cost in one place: llama-server feeds its draft the prompt before the first
        token (in its prompt time), Specula after it (in its decode time)."""
        paired = _paired_median(self.wall_by_repeat.get(over, {}), self.wall_by_repeat.get(side, {}))
        return 0.0 if paired is None else paired

    def best(self, prefix: str) -> tuple[str, float] | None:
        """The side starting with ``prefix`` with the highest decode rate (None: none ran)."""
        sides = [s for s in self.decode if s.startswith(prefix)]
        if not sides:
            return None
        side = max(sides, key=lambda s: self.decode[s])
        return side, self.decode[side]


def rows(runs: Sequence[PeerRun], reference: str = PEER_PLAIN) -> list[PeerRow]:
    """Per prompt (in first-seen order): median figures per side; a side's text is
    identical when every one of its runs gave the reference side's first text."""
    out: dict[str, PeerRow] = {}
    ref_text: dict[str, str] = {}
    for r in runs:
        if r.side == reference and r.prompt_id not in ref_text:
            ref_text[r.prompt_id] = r.text
    by: dict[tuple[str, str], list[PeerRun]] = {}
    for r in runs:
        out.setdefault(r.prompt_id, PeerRow(r.prompt_id))
        by.setdefault((r.prompt_id, r.side), []).append(r)
    for (pid, side), rs in by.items():
        row = out[pid]
        row.decode[side] = statistics.median(r.decode_tok_s for r in rs)
        row.by_repeat[side] = {r.repeat: r.decode_tok_s for r in rs}
        row.wall_by_repeat[side] = {r.repeat: r.wall_s for r in rs}
        row.ttft[side] = statistics.median(r.ttft_s for r in rs)
        row.wall[side] = statistics.median(r.wall_s for r in rs)
        drafted = sum(r.drafted for r in rs)
        row.acceptance[side] = sum(r.accepted for r in rs) / drafted if drafted else None
        if pid in ref_text:
            row.identical[side] = all(r.text == ref_text[pid] for r in rs)
    return list(out.values())


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def format_table(table: Sequence[PeerRow], sides: Sequence[str]) -> str:
    """The per-prompt table: decode tok/s with the ratio to llama-server without a draft,
    TTFT, wall and acceptance, a mark where a text differs from the reference, then the
    medians and the ratios that judge adaptive (to llama-server's best draft setting, to
    Specula's best fixed chain, to Specula plain)."""
    out = []
    head = f"{'prompt':<20}" + "".join(f" | {s:>24}" for s in sides)
    out.append("decode tok/s (x llama-server without a draft), TTFT ms, wall s, acceptance; "
               "* = text differs from llama-server's")
    out.append(head)
    out.append("-" * len(head))
    for row in table:
        cells = []
        for s in sides:
            if s not in row.decode:
                cells.append(f" | {'-':>24}")
                continue
            acc = row.acceptance.get(s)
            mark = "" if row.identical.get(s, True) else "*"
            cell = (f"{row.decode[s]:.2f} ({row.ratio(s):.2f}x) {row.ttft[s] * 1000:.0f} "
                    f"{row.wall[s]:.1f}" + (f" {acc:.0%}" if acc is not None else "") + mark)
            cells.append(f" | {cell:>24}")
        out.append(f"{row.prompt_id:<20}" + "".join(cells))
    med = [f" | {_median([r.ratio(s) for r in table if s in r.decode]):>23.2f}x" for s in sides]
    out.append(f"{'median ratio':<20}" + "".join(med))
    out.extend(verdict_lines(table))
    return "\n".join(out)


def verdict_lines(table: Sequence[PeerRow]) -> list[str]:
    """Per prompt and in the median, Specula's default mode against its peers."""
    lines = []
    cols: dict[str, list[float]] = {"peer_draft": [], "best_chain": [], "plain": []}
    whole: list[float] = []  # whole replies, against llama-server's best draft setting
    for row in table:
        if "specula adaptive" not in row.decode:
            continue
        bits = []
        for key, other in (("peer_draft", row.best("llama-server draft")),
                           ("best_chain", row.best("specula chain")),
                           ("plain", row.best("specula plain"))):
            if other:
                x = row.ratio("specula adaptive", other[0])
                cols[key].append(x)
                if key == "peer_draft":
                    whole.append(row.wall_ratio("specula adaptive", other[0]))
                bits.append(f"{x:.2f}x {other[0]}")
        lines.append(f"  adaptive on {row.prompt_id}: " + ", ".join(bits))
    names = {"peer_draft": "llama-server's best draft setting", "best_chain": "the best fixed chain",
             "plain": "specula plain"}
    for key, xs in cols.items():
        if xs:
            lines.append(f"  adaptive / {names[key]}: median {_median(xs):.2f}x, min {min(xs):.2f}x")
            if key == "peer_draft" and whole:
                lines.append(f"  adaptive / {names[key]}, whole reply (wall time): "
                             f"median {_median(whole):.2f}x, min {min(whole):.2f}x")
    mtp = [row.ratio("specula mtp", peer[0]) for row in table
           if "specula mtp" in row.decode and (peer := row.best("llama-server mtp"))]
    if mtp:
        lines.append(f"  specula mtp / llama-server's best mtp setting: median {_median(mtp):.2f}x, "
                     f"min {min(mtp):.2f}x")
    return lines


def to_json(runs: Sequence[PeerRun], setup: dict[str, object]) -> dict[str, object]:
    return {"setup": setup, "runs": [asdict(r) for r in runs],
            "rows": [asdict(r) for r in rows(runs)]}
