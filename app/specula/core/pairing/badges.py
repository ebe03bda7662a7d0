"""Verdicts the model pages show at a glance: does it fit, does it pair, and plain numbers.

Why in the core: the Discover rows, the library's details and the chat's
recommendation all say the same things ("fits on GPU with the draft",
"drafts for Qwen2.5 Coder 1.5B"); computing them here keeps the widgets
free of decisions and lets the rules be tested without Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from specula.core.gguf.compat import Verdict, check
from specula.core.gguf.model_info import ModelInfo
from specula.core.hardware.fit import FitVerdict, estimate
from specula.core.pairing.drafts import size_from_name


class Tone(str, Enum):
    GOOD = "good"
    OK = "ok"  # usable with a caveat
    BAD = "bad"
    NEUTRAL = "neutral"  # nothing to judge against
    BUSY = "busy"  # still being worked out


@dataclass(frozen=True)
class Badge:
    text: str
    tone: Tone
    detail: str = ""  # a tooltip: the numbers or the reasons


READING = Badge("reading header", Tone.BUSY, "Reading the file's header from the hub…")


def human_size(n: float | None) -> str:
    """Decimal units as the hub shows them: 491 MB, 1.12 GB."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            if unit in ("B", "kB", "MB"):
                return f"{value:.0f} {unit}"
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def human_count(n: int | None) -> str:
    """1234567 -> 1.2M, 4321 -> 4.3k, None -> ?"""
    if n is None:
        return "?"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def human_duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "--:--"
    s = int(seconds + 0.5)
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def human_params(n: int | None) -> str:
    if not n:
        return ""
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


def model_scale(info: ModelInfo, name: str | None = None) -> float | None:
    """Parameters from the header, else from the name, else bytes (for 'smaller than')."""
    if info.parameter_count:
        return float(info.parameter_count)
    found = size_from_name(name or Path(info.source).name)
    return found or (float(info.file_size) if info.file_size else None)


_FIT_TONES = {FitVerdict.GPU: Tone.GOOD, FitVerdict.PARTIAL: Tone.OK, FitVerdict.CPU: Tone.OK,
              FitVerdict.NO: Tone.BAD}


def fit_badge(info: ModelInfo, weights: int | None, *, draft: ModelInfo | None = None,
              draft_weights: int | None = None, n_ctx: int | None = None,
              gpu_free: Sequence[int] = (), ram_available: int | None = None) -> Badge:
    """Whether ``info`` (as the target, with ``draft`` if any) fits this machine at ``n_ctx``."""
    est = estimate(info, draft, n_ctx=n_ctx, target_weights=weights,
                   draft_weights=draft_weights if draft is not None else None,
                   gpu_free=list(gpu_free), ram_available=ram_available)
    text = est.verdict.value
    if draft is not None:
        text += " + draft"
    ctx = f"At {est.n_ctx} tokens of context"
    with_draft = f" with the draft {draft.display_name}" if draft is not None else " without a draft"
    return Badge(text, _FIT_TONES[est.verdict], f"{ctx}{with_draft}: {est.message}")


def pair_badge(loaded: ModelInfo | None, candidate: ModelInfo,
               candidate_name: str | None = None) -> Badge:
    """Can ``candidate`` draft for the loaded target (or, when larger, be drafted by it)?

    The short text is relative to the loaded target ("draft for it"); the detail names both.
    """
    if loaded is None:
        return Badge("no target loaded", Tone.NEUTRAL,
                     "Load a target model on the chat page to check compatibility.")
    if loaded.tokenizer is None or candidate.tokenizer is None:
        return Badge("unknown", Tone.NEUTRAL, "The tokenizer could not be read.")
    mine, theirs = model_scale(candidate, candidate_name), model_scale(loaded)
    as_draft = mine is None or theirs is None or mine < theirs
    report = check(loaded, candidate) if as_draft else check(candidate, loaded)
    name = loaded.display_name
    if not report.usable:
        return Badge("incompatible", Tone.BAD, f"With {name}: {report.reason()}")
    mine_name = candidate.display_name
    if mine is not None and theirs is not None and abs(mine - theirs) <= 0.02 * theirs:
        text, sentence = "same size", f"{mine_name} is as large as {name} (no speed-up)"
    elif as_draft:
        text, sentence = "draft for it", f"{mine_name} can draft for {name}"
    else:
        text, sentence = "target for it", f"{name} can draft for {mine_name}"
    tone = Tone.GOOD if report.verdict is Verdict.IDENTICAL else Tone.OK
    mark = "✓" if tone is Tone.GOOD else "≈"
    return Badge(f"{mark} {text}", tone, f"{sentence} (the loaded target): {report.reason()}")


def error_badge(message: str) -> Badge:
    return Badge("header unreadable", Tone.BAD, message)


def detected_gpu_free() -> list[int]:
    """Free VRAM per local GPU; [] on a CPU build or when detection fails."""
    from specula.core.hardware import system as hardware

    try:
        return hardware.gpu_free_bytes()
    except Exception:  # detection is a convenience; the estimate still works without it
        return []


@dataclass(frozen=True)
class FileBadges:
    fit: Badge
    pair: Badge


def badges_for(info: ModelInfo, weights: int | None, name: str, *, target: ModelInfo | None,
               draft: ModelInfo | None, n_ctx: int | None,
               gpu_free: Sequence[int] = ()) -> FileBadges:
    """Both badges of one file: fit (as the target, with the loaded draft) and pairing."""
    fit = fit_badge(info, weights, draft=draft, draft_weights=draft.file_size if draft else None,
                    n_ctx=n_ctx, gpu_free=gpu_free)
    return FileBadges(fit, pair_badge(target, info, name))
