"""``logprobs`` / ``top_logprobs``: the request fields and the reply objects.

The numbers come from the target's verified distribution at each position
(``TokenEvent.logprob`` / ``top_logprobs``), the same with and without a draft:
a drafted token's log-probability is the target's at the position that accepted
it. The engine thread turns token ids into their bytes (only it may touch the
model) and the HTTP thread writes them out in the two shapes of the API:

* chat: ``choices[].logprobs.content[]`` = ``{token, logprob, bytes, top_logprobs:
  [{token, logprob, bytes}]}``;
* completions (the legacy shape): ``{tokens, token_logprobs, top_logprobs: [{token:
  logprob}], text_offset}``, offsets counted in the reply's text.

A token whose bytes are part of a UTF-8 character shows as U+FFFD in ``token``;
``bytes`` has the exact bytes. A log-probability of minus infinity (a token the
grammar forbids) is written as -9999.0, as OpenAI does, JSON having no infinity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specula.server.errors import bad

MAX_TOP_LOGPROBS = 20  # as the OpenAI API
FLOOR = -9999.0


@dataclass(frozen=True)
class TokenLogprob:
    """One emitted token: its bytes and log-probability, and the most likely alternatives."""

    token: bytes
    logprob: float
    top: tuple[tuple[bytes, float], ...] = ()


def _finite(x: float) -> float:
    return x if math.isfinite(x) else FLOOR


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def parse_logprobs(body: dict[str, Any], kind: str) -> int | None:
    """How many alternatives per token the reply lists (0: only the chosen token's
    log-probability), or None when logprobs are off."""
    if kind == "chat":
        on = body.get("logprobs")
        if on is not None and not isinstance(on, bool):
            raise bad("logprobs", "'logprobs' must be a boolean.", "invalid_type")
        top = body.get("top_logprobs")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int)):
            raise bad("top_logprobs", "'top_logprobs' must be an integer.", "invalid_type")
        if top is not None and not 0 <= top <= MAX_TOP_LOGPROBS:
            raise bad("top_logprobs", f"'top_logprobs' must be between 0 and "
                      f"{MAX_TOP_LOGPROBS}, got {top}.")
        if top is not None and not on:
            raise bad("top_logprobs", "'top_logprobs' needs 'logprobs': true.")
        return (top or 0) if on else None
    n = body.get("logprobs")
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise bad("logprobs", "'logprobs' must be an integer (how many alternatives per token).",
                  "invalid_type")
    if not 0 <= n <= MAX_TOP_LOGPROBS:
        raise bad("logprobs", f"'logprobs' must be between 0 and {MAX_TOP_LOGPROBS}, got {n}.")
    return n


def chat_content(entries: Sequence[TokenLogprob]) -> list[dict[str, Any]]:
    """``choices[].logprobs.content`` of a chat reply (or of one streamed chunk)."""
    return [{
        "token": _text(e.token), "logprob": _finite(e.logprob), "bytes": list(e.token),
        "top_logprobs": [{"token": _text(b), "logprob": _finite(lp), "bytes": list(b)}
                         for b, lp in e.top],
    } for e in entries]


def chat_logprobs(entries: Sequence[TokenLogprob]) -> dict[str, Any]:
    return {"content": chat_content(entries), "refusal": None}


def _top_dict(e: TokenLogprob) -> dict[str, float]:
    """The legacy ``{token: logprob}``: two tokens with the same text (bytes of different
    characters both show as U+FFFD) keep the more likely one's number."""
    top: dict[str, float] = {}
    for b, lp in e.top:
        top.setdefault(_text(b), _finite(lp))
    return top


def text_logprobs(entries: Sequence[TokenLogprob], offset: int = 0) -> dict[str, Any]:
    """The legacy completions shape; ``offset``: where these tokens start in the reply text."""
    tokens, offsets = [], []
    for e in entries:
        offsets.append(offset)
        text = _text(e.token)
        tokens.append(text)
        offset += len(text)
    return {
        "tokens": tokens,
        "token_logprobs": [_finite(e.logprob) for e in entries],
        "top_logprobs": [_top_dict(e) for e in entries],
        "text_offset": offsets,
    }
