"""Every way of proposing draft tokens, behind one :class:`Drafter` protocol.

``proposal`` holds the plain records (request, proposal, token tree, where a proposal
comes from, the lookup match codes), ``base`` the protocol and the one patch point
(``keep_short_draft``); the drafters import those two, never one another's package."""

from specula.core.engine.drafters.base import (
    Drafter,
    keep_short_draft,
)
from specula.core.engine.drafters.lookup import LookupDrafter
from specula.core.engine.drafters.model import ChainDrafter, DraftModel
from specula.core.engine.drafters.proposal import DraftRequest, Proposal, TokenTree
from specula.core.engine.drafters.tree import MAX_TREE_SEQS, TreeDrafter

__all__ = [
    "MAX_TREE_SEQS",
    "ChainDrafter",
    "DraftModel",
    "DraftRequest",
    "Drafter",
    "LookupDrafter",
    "Proposal",
    "TokenTree",
    "TreeDrafter",
    "keep_short_draft",
]
