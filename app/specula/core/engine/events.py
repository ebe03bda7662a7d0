"""What a generation yields, in order: TokenEvents and StepEvents, then one Done.

The GUI colours ``TokenEvent.source`` (``draft`` = proposed by the draft and
accepted by the target; ``target`` = produced by the target itself; ``lookup`` =
proposed by prompt lookup and accepted; ``mtp`` = proposed by the target's own MTP
layers and accepted, coloured as drafted), and pushes statistics to the view a
few times a second from the StepEvents, never once per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.verdict import PolicyVerdict


class Source(str, Enum):
    DRAFT = "draft"
    TARGET = "target"
    LOOKUP = "lookup"
    MTP = "mtp"  # proposed by the target's own MTP layers and accepted


class StopReason(str, Enum):
    EOS = "eos"  # the model ended its turn
    STOP_STRING = "stop"  # a stop string appeared (not emitted)
    MAX_TOKENS = "length"  # the token limit was reached
    CONTEXT_FULL = "context_full"  # no room left in the context window
    CANCELLED = "cancelled"  # the user stopped it; the text so far is kept
    ERROR = "error"


@dataclass
class TokenEvent:
    token_id: int
    text: str  # the text this token adds (may be "" while a UTF-8 char or stop string is pending)
    source: Source
    draft_prob: float | None  # the draft's probability for this token, when it proposed it
    step: int
    relaxed: bool = False  # accepted only by the lossy relaxed rule
    # Only when SamplingParams.logprobs asks: the log-softmax of the target's raw logits at
    # this position (no penalty, grammar mask or temperature), for the token and the
    # top alternatives as (token id, logprob), best first (docs/engine.md).
    logprob: float | None = None
    top_logprobs: list[tuple[int, float]] | None = None


@dataclass
class StepEvent:
    record: StepRecord
    stats: GenerationStats  # a snapshot of the running totals after this step (never changes)


@dataclass
class Done:
    stop_reason: StopReason
    text: str
    token_ids: list[int]
    stats: GenerationStats
    message: str = ""  # a human sentence for CONTEXT_FULL / ERROR
    prompt_token_ids: list[int] = field(default_factory=list)
    # The adaptive policy's judgement after this reply (None in the other modes).
    verdict: PolicyVerdict | None = None


Event = TokenEvent | StepEvent | Done
