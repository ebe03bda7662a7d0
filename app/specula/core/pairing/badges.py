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

from specula.core.gguf.compat import Verdict
from specula.core.gguf.model_info import ModelInfo
from specula.core.hardware.fit import FitVerdict, estimate
from specula.core.pairing.drafts import Role, judge, role_of, same_file
from specula.core.pairing.names import model_scale


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


def human_count(n: int | None) -> str:
    """1234567 -> 1.2M, 4321 -> 4.3k, None -> ?"""
    if n is None:
        return "?"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def plural(n: int, noun: str, many: str | None = None) -> str:
    """'1 model', '2 models', '0 models' ('1 repository', '3 repositories' with ``many``)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


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
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


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


def is_same_file(a: ModelInfo, b: ModelInfo, b_name: str | None = None) -> bool:
    """Whether two headers are one file (a local copy and its hub original count as one)."""
    return same_file(Path(a.source).name, a.file_size) == same_file(
        b_name or Path(b.source).name, b.file_size)


def pair_badge(loaded: ModelInfo | None, candidate: ModelInfo,
               candidate_name: str | None = None, *, loaded_draft: ModelInfo | None = None) -> Badge:
    """Can ``candidate`` draft for the loaded target (or, when larger, be drafted by it)?

    The short text is relative to the loaded target ("draft for it"); the detail names both.
    The decision is :func:`specula.core.pairing.drafts.judge`, the one every view asks.
    """
    return _pairing(loaded, candidate, candidate_name, loaded_draft)[0]


def _pairing(loaded: ModelInfo | None, candidate: ModelInfo, candidate_name: str | None,
             loaded_draft: ModelInfo | None) -> tuple[Badge, bool]:
    """The pair badge, and whether ``candidate`` suits the loaded target as its draft."""
    if loaded is None:
        return Badge("no target loaded", Tone.NEUTRAL,
                     "Load a target model on the chat page to check compatibility."), False
    if is_same_file(loaded, candidate, candidate_name):
        return Badge("loaded target", Tone.NEUTRAL,
                     f"{loaded.display_name} is the loaded target."), False
    if loaded.tokenizer is None or candidate.tokenizer is None:
        return Badge("unknown", Tone.NEUTRAL, "The tokenizer could not be read."), False
    loaded_name = Path(loaded.source).name
    name_of = candidate_name or Path(candidate.source).name
    role = role_of(model_scale(loaded, loaded_name), model_scale(candidate, name_of))
    as_draft = role is not Role.TARGET
    verdict = (judge(loaded, loaded_name, candidate, name_of, "", "", None) if as_draft
               else judge(candidate, name_of, loaded, loaded_name, "", "", None))
    report = verdict.report
    name = loaded.display_name
    if not report.usable:
        return Badge("incompatible", Tone.BAD, f"With {name}: {report.reason()}"), False
    mine_name = candidate.display_name
    if role is Role.SAME:
        text, sentence = "same size", f"{mine_name} is as large as {name} (no speed-up)"
    elif as_draft:
        text, sentence = "draft for it", f"{mine_name} can draft for {name}"
    else:
        text, sentence = "target for it", f"{name} can draft for {mine_name}"
    if loaded_draft is not None and is_same_file(loaded_draft, candidate, candidate_name):
        text, sentence = "loaded draft", f"{mine_name} is the loaded draft for {name}"
    tone = Tone.GOOD if report.verdict is Verdict.IDENTICAL else Tone.OK
    mark = "✓" if tone is Tone.GOOD else "≈"
    badge = Badge(f"{mark} {text}", tone, f"{sentence} (the loaded target): {report.reason()}")
    return badge, as_draft and verdict.suits


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
    """Both badges of one file: how it fits and how it pairs with the loaded models.

    A file that would draft for the loaded target is fitted as that draft (the
    loaded target plus this file); any other file as the target with the loaded
    draft (none when the file is that draft).
    """
    pair, as_draft = _pairing(target, info, name, draft)
    if target is not None and as_draft:
        est = fit_badge(target, target.file_size, draft=info, draft_weights=weights,
                        n_ctx=n_ctx, gpu_free=gpu_free)
        fit = Badge(est.text.replace(" + draft", " as draft"), est.tone,
                    f"As the draft of {target.display_name}. {est.detail}")
        return FileBadges(fit, pair)
    if draft is not None and is_same_file(draft, info, name):
        draft = None
    fit = fit_badge(info, weights, draft=draft, draft_weights=draft.file_size if draft else None,
                    n_ctx=n_ctx, gpu_free=gpu_free)
    return FileBadges(fit, pair)
