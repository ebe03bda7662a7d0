"""Every way of proposing draft tokens, behind one :class:`Drafter` protocol."""

from specula.core.engine.drafters.base import (
    Drafter,
    DraftRequest,
    DraftSource,
    Proposal,
    keep_short_draft,
)
from specula.core.engine.drafters.lookup import LookupDrafter
from specula.core.engine.drafters.model import ChainDrafter, DraftModel
from specula.core.engine.drafters.tree import MAX_TREE_SEQS, TokenTree, TreeDrafter

__all__ = [
    "MAX_TREE_SEQS",
    "ChainDrafter",
    "DraftModel",
    "DraftRequest",
    "DraftSource",
    "Drafter",
    "LookupDrafter",
    "Proposal",
    "TokenTree",
    "TreeDrafter",
    "keep_short_draft",
]
