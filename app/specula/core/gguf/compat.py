"""Can a draft model serve a target model? Every check, with a plain sentence.

The blocking rules are the ones llama.cpp itself applies before speculating
(``common_speculative_are_compatible`` in ``common/speculative.cpp``): same
vocab type, same add_bos (and BOS id when set), same add_eos (and EOS id when
set), vocab sizes within 128, identical token text from id 5 on. What it does
not check but still changes the tokens a draft proposes (pre-tokenizer, merges,
token types, end-of-turn token) is reported as a warning. What the pair's
architectures mean (a draft of another family is fine: the target checks every
token; the target's memory decides what a rejected draft costs; MTP layers are a
draft inside the target) is reported as notes, which never change the verdict.
The verdict is about the tokenizers only, and is printed as such: a mamba target
with a llama draft has an identical tokenizer, not an identical model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

from specula.core.gguf.memory_kind import MemoryKind
from specula.core.gguf.model_info import ModelInfo, TokenizerInfo
from specula.core.gguf.speculation_notes import (
    draft_experts_note,
    draft_memory_note,
    experts_note,
    memory_note,
    mtp_note,
)

VOCAB_MAX_SIZE_DIFFERENCE = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE
VOCAB_CHECK_START_TOKEN_ID = 5  # SPEC_VOCAB_CHECK_START_TOKEN_ID


class Verdict(str, Enum):
    IDENTICAL = "identical"  # same tokenizer fingerprint: every token means the same
    COMPATIBLE = "compatible"  # llama.cpp's rules pass; warnings may remain
    INCOMPATIBLE = "incompatible"


class Severity(str, Enum):
    BLOCKING = "blocking"  # failing it makes the pair unusable
    WARNING = "warning"  # failing it costs acceptance, not correctness
    NOTE = "note"  # what the pair is; never fails, never changes the verdict


@dataclass
class Check:
    name: str
    passed: bool
    severity: Severity
    message: str


@dataclass
class CompatReport:
    target: str
    draft: str
    verdict: Verdict
    checks: list[Check] = field(default_factory=list)
    same_architecture: bool | None = None  # None: a header does not name its architecture

    @property
    def usable(self) -> bool:
        return self.verdict is not Verdict.INCOMPATIBLE

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.severity is Severity.BLOCKING]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.severity is Severity.WARNING]

    @property
    def notes(self) -> list[Check]:
        return [c for c in self.checks if c.severity is Severity.NOTE]

    def verdict_text(self) -> str:
        """The verdict in words that say what it is about (the tokenizers)."""
        if self.verdict is Verdict.INCOMPATIBLE:
            return "incompatible tokenizers (this draft cannot be used with this target)"
        words = ("identical tokenizer" if self.verdict is Verdict.IDENTICAL
                 else "compatible tokenizer")
        if self.same_architecture is False:
            words += " (different architectures)"
        return words

    def reason(self) -> str:
        """One line for a tooltip: why the pair cannot be used, or that it can."""
        if self.failures:
            return "; ".join(c.message for c in self.failures)
        if self.warnings:
            return "Usable, but: " + "; ".join(c.message for c in self.warnings)
        return "Same tokenizer." if self.verdict is Verdict.IDENTICAL else "Compatible tokenizer."

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        d["usable"] = self.usable
        for c in d["checks"]:
            c["severity"] = c["severity"].value
        return d


def _first_text_difference(t: TokenizerInfo, d: TokenizerInfo) -> tuple[int, str, str] | None:
    n = min(len(t.tokens), len(d.tokens))
    for i in range(VOCAB_CHECK_START_TOKEN_ID, n):
        if t.tokens[i] != d.tokens[i]:
            return i, t.tokens[i], d.tokens[i]
    return None


def _same(name: str, sev: Severity, ok: bool, good: str, bad: str) -> Check:
    return Check(name, ok, sev, good if ok else bad)


def _added_token(name: str, target: tuple[bool | None, int | None], draft: tuple[bool | None, int | None],
                 neither: str) -> Check:
    """BOS or EOS: both add it or neither does, and the id agrees when it is added
    (``(add, id)`` of each tokenizer; ``neither`` says what holds when neither adds it)."""
    (t_add, t_id), (d_add, d_id) = target, draft
    kind = name.upper()
    return _same(
        name, Severity.BLOCKING, t_add == d_add and (not t_add or t_id == d_id),
        f"Both add {kind} id {t_id}." if t_add else neither,
        f"{kind} differs: target add_{name}={t_add} id {t_id}, draft add_{name}={d_add} id {d_id}.",
    )


def check(target: ModelInfo, draft: ModelInfo) -> CompatReport:
    """Compare the tokenizers of ``target`` and ``draft``; never raises on odd input."""
    checks: list[Check] = []
    t, d = target.tokenizer, draft.tokenizer
    B, W = Severity.BLOCKING, Severity.WARNING
    if t is None or d is None:
        missing = target.display_name if t is None else draft.display_name
        checks.append(Check("tokenizer", False, B, f"{missing} has no tokenizer in its GGUF."))
        return CompatReport(target.source, draft.source, Verdict.INCOMPATIBLE, checks)

    checks.append(_same(
        "vocab_type", B, t.model == d.model,
        f"Both use the {t.model} tokenizer type.",
        f"Tokenizer types differ: target {t.model}, draft {d.model}.",
    ))
    checks.append(_added_token(
        "bos", (t.add_bos, t.bos_id), (d.add_bos, d.bos_id),
        f"Neither adds a BOS token (ids {t.bos_id} and {d.bos_id} are not used)."))
    checks.append(_added_token(
        "eos", (t.add_eos, t.eos_id), (d.add_eos, d.eos_id),
        f"Neither appends an EOS token (end of generation: target {t.eos_id}, draft {d.eos_id})."))
    nt, nd = len(t.tokens), len(d.tokens)
    checks.append(_same(
        "vocab_size", B, abs(nt - nd) <= VOCAB_MAX_SIZE_DIFFERENCE,
        f"Vocab sizes {nt} and {nd} are within {VOCAB_MAX_SIZE_DIFFERENCE}.",
        f"Vocab sizes differ by {abs(nt - nd)} ({nt} vs {nd}); at most "
        f"{VOCAB_MAX_SIZE_DIFFERENCE} is allowed.",
    ))
    diff = _first_text_difference(t, d)
    checks.append(_same(
        "token_text", B, diff is None,
        f"Token texts agree from id {VOCAB_CHECK_START_TOKEN_ID} to {min(nt, nd) - 1}.",
        (f"Token {diff[0]} differs: target {diff[1]!r}, draft {diff[2]!r}." if diff else ""),
    ))
    # What llama.cpp does not check, but what changes tokenisation or stopping.
    checks.append(_same(
        "pre_tokenizer", W, t.pre == d.pre,
        f"Same pre-tokenizer ({t.pre}).",
        f"Pre-tokenizers differ: target {t.pre}, draft {d.pre}; the draft may split text "
        "differently and be accepted less often.",
    ))
    checks.append(_same(
        "merges", W, t.merges_hash == d.merges_hash,
        f"Same BPE merges ({t.n_merges})." if t.n_merges else "Neither has BPE merges.",
        f"BPE merges differ ({t.n_merges} vs {d.n_merges}); the draft tokenises differently.",
    ))
    n = min(len(t.token_types), len(d.token_types))
    types_ok = t.token_types[:n] == d.token_types[:n]
    checks.append(_same(
        "token_types", W, types_ok,
        "Token types (normal, control, byte...) agree.",
        "Token types differ (e.g. a control token in one is normal in the other).",
    ))
    checks.append(_same(
        "eot", W, t.eot_id == d.eot_id,
        "Same end-of-turn token." if t.eot_id is not None else "Neither sets an end-of-turn token.",
        f"End-of-turn tokens differ: target {t.eot_id}, draft {d.eot_id}.",
    ))
    checks += _notes(target, draft)
    if any(not c.passed and c.severity is B for c in checks):
        verdict = Verdict.INCOMPATIBLE
    elif target.tokenizer_fingerprint == draft.tokenizer_fingerprint:
        verdict = Verdict.IDENTICAL
    else:
        verdict = Verdict.COMPATIBLE
    same = (target.architecture == draft.architecture
            if target.architecture and draft.architecture else None)
    return CompatReport(target.source, draft.source, verdict, checks, same)


def _notes(target: ModelInfo, draft: ModelInfo) -> list[Check]:
    """What the two architectures mean for speculation (never blocking)."""
    N = Severity.NOTE
    ta, da = target.architecture or "?", draft.architecture or "?"
    if ta == da:
        arch = f"Both are {ta}."
    else:
        arch = (f"Different architectures: target {ta}, draft {da}. Fine for exactness (the "
                "target checks every drafted token); only how often drafts are accepted depends "
                "on how alike the two models are.")
    notes = [Check("architecture", True, N, arch),
             Check("target_memory", True, N, f"Target {memory_note(target.memory)}.")]
    if draft.memory in (MemoryKind.RECURRENT, MemoryKind.HYBRID):
        notes.append(Check("draft_memory", True, N, f"Draft {draft_memory_note(draft.memory)}."))
    if target.expert_count:
        notes.append(Check("target_experts", True, N, "Target experts: "
                           f"{experts_note(target.expert_count, target.expert_used_count)}."))
    if draft.expert_count:
        notes.append(Check("draft_experts", True, N, "Draft experts: "
                           f"{draft_experts_note(draft.expert_count, draft.expert_used_count)}."))
    if target.nextn_layers:
        notes.append(Check("target_mtp", True, N,
                           f"Target MTP: {mtp_note(target.nextn_layers, target.architecture)}."))
    return notes


def _mark(c: Check) -> str:
    if c.severity is Severity.NOTE:
        return "note"
    if c.passed:
        return "ok  "
    return "FAIL" if c.severity is Severity.BLOCKING else "warn"


def format_report(report: CompatReport) -> str:
    """The text `specula compat` prints."""
    lines = [
        f"target: {report.target}",
        f"draft:  {report.draft}",
        f"verdict: {report.verdict_text()}",
    ]
    for c in report.checks:
        lines.append(f"  [{_mark(c)}] {c.name:<14} {c.message}")
    return "\n".join(lines)
