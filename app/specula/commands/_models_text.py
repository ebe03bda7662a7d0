"""Text output of `specula models ...`: tables and the progress bar."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

from specula.core.hub.client import RepoListing, RepoSummary
from specula.core.hub.download import DownloadProgress, DownloadState
from specula.core.library.scan import Library, LocalModel
from specula.core.pairing.drafts import DraftCandidate, HubDrafts
from specula.core.sizes import byte_size


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class ProgressBar:
    """One self-rewriting line on stderr: percent, bytes, speed, ETA."""

    def __init__(self, stream: TextIO, width: int = 24) -> None:
        self.stream = stream
        self.width = width
        self._drawn = False
        self._last = 0.0

    def update(self, p: DownloadProgress) -> None:
        now = time.monotonic()
        final = p.state is not DownloadState.RUNNING
        if not final and now - self._last < 0.2:
            return
        self._last = now
        filled = int(self.width * p.fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        part = f" part {p.part}/{p.parts}" if p.parts > 1 else ""
        state = "" if p.state is DownloadState.RUNNING else f" {p.state.value}"
        line = (f"\r[{bar}] {p.fraction * 100:5.1f}% {byte_size(p.downloaded)}/{byte_size(p.total)} "
                f"{byte_size(p.speed)}/s ETA {_duration(p.eta)}{part}{state}")
        self.stream.write(line.ljust(78))
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def search_table(results: list[RepoSummary]) -> str:
    rows = [("REPOSITORY", "DOWNLOADS", "LIKES")]
    rows += [(r.repo_id, str(r.downloads if r.downloads is not None else "?"),
              str(r.likes if r.likes is not None else "?")) for r in results]
    return _table(rows)


def files_table(listing: RepoListing, headers: dict[str, dict[str, object]]) -> str:
    lines = [listing.repo_id]
    if listing.description:
        lines.append(f"  {listing.description}")
    if not listing.models:
        lines.append("  no GGUF files")
        return "\n".join(lines)
    rows = [("FILE", "SIZE", "QUANT", "PARTS", "CONTEXT", "PARAMS")]
    for m in listing.models:
        h = headers.get(m.filename, {})
        parts = f"{len(m.files)}" + ("" if m.complete else " (incomplete)")
        rows.append((m.filename, byte_size(m.total_size), m.quantization or "?", parts,
                     str(h.get("context_length") or ""), str(h.get("size_label") or "")))
    lines.append(_table(rows))
    return "\n".join(lines)


def library_table(library: Library, models: list[LocalModel],
                  pending: list[dict[str, object]]) -> str:
    lines = [f"models folder: {library.models_dir}"]
    for extra in library.extra_dirs:
        lines.append(f"also indexed:  {extra}")
    if not models:
        lines.append("no models yet: `specula models search TEXT`, then `specula models pull`")
    else:
        rows = [("MODEL", "SIZE", "QUANT", "PARAMS", "CONTEXT", "PATH")]
        for m in models:
            info = m.info
            label = f"{m.repo_id}/{m.name}" if m.repo_id else m.name
            if not m.complete:
                label += f" (parts missing: {len(m.parts)} present)"
            rows.append((label, byte_size(m.size),
                         (info.quantization or "?") if info else "unreadable",
                         (info.size_label or "?") if info else "",
                         str(info.context_length or "?") if info else "",
                         str(m.path)))
        lines.append(_table(rows))
    for p in pending:
        size = p["size"] if isinstance(p["size"], int) else None
        have = p["downloaded"] if isinstance(p["downloaded"], int) else 0
        pct = f"{100 * have / size:.0f}%" if size else "?"
        lines.append(f"incomplete: {p['repo_id']}/{p['filename']} {pct} "
                     f"(`specula models pull {p['repo_id']} {p['filename']}` resumes it)")
    return "\n".join(lines)


def _candidate_line(c: DraftCandidate) -> str:
    return (f"  {c.source}\n      {c.report.verdict.value}; {', '.join(c.reasons)}; "
            f"{byte_size(c.size)}")


def drafts_text(target: str, local: list[DraftCandidate], remote: HubDrafts | None) -> str:
    lines = [f"drafts for {target}", "in the library:"]
    lines += [_candidate_line(c) for c in local] or ["  none"]
    if remote is not None:
        lines.append(f"on the hub (searched {remote.query!r}):")
        lines += [_candidate_line(c) for c in remote.candidates] or ["  none"]
        for c in remote.rejected:
            lines.append(f"  not usable: {c.source}: {c.report.reason()}")
        for s in remote.skipped:
            lines.append(f"  skipped: {s}")
    return "\n".join(lines)
