"""What a generation yields, in order: TokenEvents and StepEvents, then one Done;
and :class:`TokenOrigin`, the engine's one word for where a token came from.

The GUI colours each token by ``TokenEvent.source`` and pushes statistics to the
view a few times a second from the StepEvents, never once per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.verdict import PolicyVerdict


class TokenOrigin(str, Enum):
    """Where a token came from: the engine's one word for it, from a policy's plan (which
    drafter a step asks) to a token event (what the GUI colours).

    ===============  ==================  =====================================================
    member           value               the token...
    ===============  ==================  =====================================================
    ``TARGET``       ``"target"``        is the target's own (a plain step's, a correction,
                                         the bonus after the last accepted draft token)
    ``CHAIN``        ``"draft"``         was drafted by the draft model as a chain, accepted
    ``TREE``         ``"tree"``          was a branch of the draft model's token tree, accepted
    ``LOOKUP``       ``"lookup"``        was copied from earlier in the conversation, accepted
    ``NGRAM_CACHE``  ``"ngram-cache"``   was predicted by the persistent n-gram cache, accepted
    ``MTP``          ``"mtp"``           was drafted by the target's own MTP layers, accepted
    ``RELAXED``      ``"relaxed"``       was drafted and kept only by the lossy relaxed rule
    ===============  ==================  =====================================================

    A plan (``policy.fixed.Plan``) and a proposal (``Proposal.source``) name the drafter
    they ask with the same members: ``TARGET`` (none: a plain step), ``CHAIN``, ``TREE``,
    ``LOOKUP`` (prompt lookup, falling back to the n-gram cache; its proposal's tokens
    carry ``NGRAM_CACHE`` when the cache made them) and ``MTP``. ``RELAXED`` is set by
    verification alone. What a step *verified* (a plain step, a chain, a tree) is
    ``stats.StepShape``, another question.

    The values are saved and on the wire: the adaptive policy's state file keys on
    ``"draft"`` and ``"tree"``, ``StepRecord.source`` holds a plan's value, the GUI maps
    values to colours (``gui/chat/render.py``). A plan for a plain step is ``TARGET``; a
    value written before plain steps were ``"target"`` (``"none"``) still reads as ``TARGET``.
    """

    TARGET = "target"
    CHAIN = "draft"
    TREE = "tree"
    LOOKUP = "lookup"
    NGRAM_CACHE = "ngram-cache"
    MTP = "mtp"
    RELAXED = "relaxed"

    @classmethod
    def _missing_(cls, value: object) -> TokenOrigin | None:
        """``"none"``: a plain step, as records written before read."""
        return cls.TARGET if value == "none" else None

    @property
    def drafted(self) -> bool:
        """Whether a drafter proposed the token (every origin but the target's own)."""
        return self is not TokenOrigin.TARGET


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
    source: TokenOrigin
    draft_prob: float | None  # the draft's probability for this token, when it proposed it
    step: int
    # Only when SamplingParams.logprobs asks: the log-softmax of the target's raw logits at
    # this position (no penalty, grammar mask or temperature), for the token and the
    # top alternatives as (token id, logprob), best first (docs/engine.md).
    logprob: float | None = None
    top_logprobs: list[tuple[int, float]] | None = None

    @property
    def relaxed(self) -> bool:
        """Accepted only by the lossy relaxed rule (``TokenOrigin.RELAXED``)."""
        return self.source is TokenOrigin.RELAXED


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
