"""The drafter seam: what every way of proposing tokens implements.

In the spirit of llama.cpp's ``common_speculative_impl`` (common/speculative.cpp):
a drafter is told when a reply begins, proposes a chain (or a token tree) when
asked and is told what was kept (the reply's counts, per position too, are the
generator's: ``GenerationStats``). The generator only
talks to this protocol: it never asks what a drafter is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from specula.core.engine.drafters.proposal import DraftRequest, Proposal
from specula.core.engine.events import TokenOrigin
from specula.core.engine.grammar.compile import GrammarError
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.sampling import topk
from specula.core.engine.sampling.rules import F32, AcceptanceRule


class Drafter(Protocol):
    source: TokenOrigin

    @property
    def available(self) -> bool:
        """False once the drafter stopped for the rest of this reply (see ``stopped``)."""

    @property
    def stopped(self) -> str:
        """"" or the sentence saying why the drafter stopped for the rest of the reply."""

    def begin(self, prompt: Sequence[int], *, sync: bool, window: int | None = None) -> int:
        """A reply starts (``sync``: feed the prompt now; ``window``: a probe, which need
        not feed more than that many tokens past what the drafter holds, see
        ``DraftModel.begin``; drafters that read the target's own decodes ignore it).
        Returns the tokens it fed."""

    def lag(self, committed: Sequence[int]) -> int:
        """Tokens the drafter must catch up on before it can propose."""

    def preview(self, committed: Sequence[int], k: int) -> tuple[list[int], int]:
        """What it would propose without any decode, and how sure (lookup: the n-gram
        length), so a policy can weigh it; ([], 0) for drafters that must decode."""

    def propose(self, req: DraftRequest) -> Proposal:
        """Up to ``req.k`` tokens (or a tree) after ``req.committed``; empty when it cannot."""

    def accept(self, committed: Sequence[int], n_accepted: int) -> None:
        """After verification: ``committed`` is the reply so far; drop what was not kept."""


class Timed(Protocol):
    @property
    def decode_s(self) -> float:
        """Seconds spent in its decodes."""


class TargetHead(Protocol):
    """A drafter's state fed from the target's own decodes (the target's MTP layers, an
    EAGLE-3 or DFlash head): the generator holds one, under ``TokenOrigin.MTP``."""

    n_layers: int

    @property
    def ctx(self) -> Timed:
        """What its decode time is read from."""

    def reset(self) -> None:
        """Forget everything (the target's cache was cleared)."""

    def drafter(self) -> Drafter:
        """The drafter that proposes from it."""

    def watch(self, on: bool) -> None:
        """Read the target's rows after each of its decodes, or stop."""

    def close(self) -> None:
        """Free its context (before the target's)."""


def keep_short_draft(n_drafted: int, draft_min: int, rule: AcceptanceRule) -> bool:
    """*Patch point*, the one place a drafted chain may be thrown away: whether to keep a
    chain of ``n_drafted`` tokens when ``draft_min`` asks for at least that many.

    The length of a chain cut by a probability threshold depends on the drafted tokens,
    so under rejection sampling a discard would keep only drafts whose tokens made them
    long, which are then no longer distributed as q: the output would be biased. There
    the short draft is kept. Under the coupled rule and greedy the output does not
    depend on the proposal at all, so dropping it (as LM Studio and llama.cpp do)
    only saves the verify cost of a draft that was not expected to pay.
    """
    if n_drafted == 0 or n_drafted >= draft_min:
        return True
    return rule is AcceptanceRule.REJECTION  # sample-and-match, like coupled, ignores q


ChainStep = Callable[[Proposal, DraftRequest, int, GrammarState | None], None]


def draft_chain_under_grammar(prop: Proposal, req: DraftRequest, k: int,
                              draft_chain: ChainStep) -> Proposal:
    """Run a chain drafter's ``draft_chain(prop, req, k, grammar)`` along its own clone of
    the reply's grammar (closed on every exit), then keep the chain only if it is long
    enough to pay (``keep_short_draft``, looked up here at call time). A drafter that
    finds no token the grammar admits proposes what it has."""
    g = req.grammar.clone() if req.grammar is not None else None
    try:
        draft_chain(prop, req, k, g)
    except GrammarError:
        pass
    finally:
        if g is not None:
            g.close()
    if not keep_short_draft(len(prop), req.draft_min, req.params.acceptance_rule):
        prop.truncate(0)
    return prop


def softmax_stats(logits: F32, *, shared: bool = False) -> tuple[int, float, float]:
    """(argmax, its probability, entropy in nats) of the plain softmax: the draft's
    confidence features. ``shared``: a sampling transform follows on the same row, so
    the features come from its top candidates and share their selection
    (:func:`topk.top_softmax_stats`); otherwise exact (:func:`topk.softmax_stats`)."""
    return topk.top_softmax_stats(logits) if shared else topk.softmax_stats(logits)
