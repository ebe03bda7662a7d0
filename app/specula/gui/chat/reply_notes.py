"""What the chat says about a finished reply beyond its text: Continue, and a same-text hint.

Why apart from the page: both are rules about a reply's outcome (which stop
reasons may go on; when a regenerated version is the same text again and why),
small enough to read in one place and tested without a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# A reply that ended here may go on where it stopped (its token ids are kept).
CONTINUABLE = ("length", "cancelled")

SAME_TEXT_TITLE = "The new version is the same as before"
SAME_TEXT_SENTENCES = [
    "At temperature 0 the reply is greedy: the target's most likely token every time, "
    "so regenerating gives the same text.",
    "Raise the temperature in the panel (for example 0.7) for a different version.",
]


def can_continue(stop_reason: str, has_token_ids: bool) -> bool:
    """Continue is offered for a reply cut at the token limit or stopped by the user."""
    return stop_reason in CONTINUABLE and has_token_ids


def same_as_earlier(text: str, earlier: Sequence[dict[str, Any]], greedy: bool) -> bool:
    """A greedy regeneration that repeated an earlier version word for word."""
    return greedy and any(str(v.get("content", "")) == text for v in earlier)


def needs_reply(roles: Sequence[str], busy: bool) -> bool:
    """A chat that ends in the user's message with no reply in flight (a reply deleted, a
    reply that failed): "Generate reply" is offered, and Enter on an empty composer asks."""
    return not busy and bool(roles) and roles[-1] == "user"
