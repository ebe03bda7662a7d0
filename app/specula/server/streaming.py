"""Response bodies: OpenAI completion objects, SSE chunks, usage and Specula's statistics.

The speculative statistics travel in an extra ``"specula"`` field (OpenAI
clients keep unknown fields: ``response.model_extra["specula"]`` in the Python
client), in the ``X-Specula-Stats`` header of non-streaming replies, and in
the final chunk of a stream (headers are sent before the reply exists).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from specula.core.engine.events import Done, StopReason
from specula.server.schemas import GenerationRequest

STATS_HEADER = "X-Specula-Stats"

FINISH = {
    StopReason.EOS: "stop",
    StopReason.STOP_STRING: "stop",
    StopReason.MAX_TOKENS: "length",
    StopReason.CONTEXT_FULL: "length",
    StopReason.CANCELLED: "stop",
    StopReason.ERROR: "error",
}


def new_id(kind: str) -> str:
    return ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]


def usage(prompt_tokens: int, done: Done) -> dict[str, int]:
    completion = len(done.token_ids)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion}


def spec_stats(done: Done, draft: str | None) -> dict[str, Any]:
    """The speculative statistics of one reply (acceptance is of drafted tokens)."""
    s = done.stats
    return {
        "mode": s.mode, "draft": draft if s.mode != "plain" else None,
        "acceptance_rule": s.acceptance_rule,
        "drafted": s.drafted, "accepted": s.accepted,
        "acceptance": round(s.acceptance_rate, 4),
        "mean_accepted_per_step": round(s.mean_accepted_per_step, 4),
        "steps": s.steps, "tokens": s.tokens,
        "tokens_per_s": round(s.tokens_per_s, 2), "ttft_s": round(s.ttft_s, 4),
        "total_s": round(s.total_s, 4), "stop_reason": done.stop_reason.value,
    }


def stats_header(stats: dict[str, Any]) -> str:
    """``mode=chain; drafted=40; accepted=31; acceptance=0.775; mean_accepted_per_step=2.58``."""
    keys = ("mode", "drafted", "accepted", "acceptance", "mean_accepted_per_step", "tokens",
            "tokens_per_s")
    return "; ".join(f"{k}={stats[k]}" for k in keys)


def _choice(req: GenerationRequest, text: str, finish: str | None, delta: bool) -> dict[str, Any]:
    if req.kind == "text":
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
    if delta:
        return {"index": 0, "delta": {"content": text} if text else {}, "logprobs": None,
                "finish_reason": finish}
    return {"index": 0, "message": {"role": "assistant", "content": text},
            "logprobs": None, "finish_reason": finish}


def completion(req: GenerationRequest, rid: str, model: str, prompt_tokens: int, done: Done,
               stats: dict[str, Any]) -> dict[str, Any]:
    """The whole non-streaming reply."""
    return {
        "id": rid, "object": "chat.completion" if req.kind == "chat" else "text_completion",
        "created": int(time.time()), "model": model,
        "choices": [_choice(req, done.text, FINISH[done.stop_reason], delta=False)],
        "usage": usage(prompt_tokens, done), "specula": stats,
    }


def chunk(req: GenerationRequest, rid: str, model: str, text: str = "",
          finish: str | None = None, role: bool = False, **extra: Any) -> dict[str, Any]:
    """One streamed piece (``role`` marks a chat stream's first chunk)."""
    c = _choice(req, text, finish, delta=True)
    if role and req.kind == "chat":
        c["delta"] = {"role": "assistant", "content": text}
    return {
        "id": rid, "object": "chat.completion.chunk" if req.kind == "chat" else "text_completion",
        "created": int(time.time()), "model": model, "choices": [c], **extra,
    }


def usage_chunk(req: GenerationRequest, rid: str, model: str, usage_: dict[str, int],
                stats: dict[str, Any]) -> dict[str, Any]:
    """The extra last chunk that ``stream_options.include_usage`` asks for (no choices)."""
    c = chunk(req, rid, model, usage=usage_, specula=stats)
    c["choices"] = []
    return c


def sse(obj: dict[str, Any] | str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()
