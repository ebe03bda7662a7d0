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
from collections.abc import Sequence
from typing import Any

from specula.core.chat.tool_calls import CallDelta, CallStream, parse_reply
from specula.core.engine.events import Done, StopReason
from specula.server.logprobs import TokenLogprob, chat_content, chat_logprobs, text_logprobs
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
    out: dict[str, object] = {
        "mode": s.mode, "draft": draft if s.mode != "plain" else None,
        "acceptance_rule": s.acceptance_rule,
        "drafted": s.drafted, "accepted": s.accepted,
        "acceptance": round(s.acceptance_rate, 4),
        "mean_accepted_per_step": round(s.mean_accepted_per_step, 4),
        # the same figure, None when nothing was drafted, and what it divides by
        "accepted_per_drafting_step": (None if s.accepted_per_drafting_step is None
                                       else round(s.accepted_per_drafting_step, 4)),
        "drafting_steps": s.drafting_steps,
        # per draft position: proposals that reached it, steps accepted through it
        "drafted_per_pos": list(s.drafted_per_pos),
        "accepted_per_pos": list(s.accepted_per_pos),
        "steps": s.steps, "tokens": s.tokens,
        "tokens_per_s": round(s.tokens_per_s, 2), "ttft_s": round(s.ttft_s, 4),
        "total_s": round(s.total_s, 4), "stop_reason": done.stop_reason.value,
        # what this reply fed that no cache held: the target's prompt (its time is TTFT)
        # and the draft's catch-up on tokens it had not seen (after the first token, so
        # inside tokens_per_s): a reply whose prompt the caches already held is faster
        "prefill_tokens": s.prefill_tokens,
        "draft_catchup_tokens": s.draft_catchup_tokens,
        "draft_catchup_s": round(s.draft_catchup_s, 4),
        # where the steps' time went: the draft's decodes, the target's verify decodes,
        # the host's own work, and the steps' wall time (the gaps between them included)
        "draft_s": round(s.draft_s, 4), "verify_s": round(s.verify_s, 4),
        "host_s": round(s.overhead_s, 4), "step_s": round(s.step_s, 4),
    }
    if s.memory != "attention":  # what keeping a recurrent target exact cost (kv.py)
        out["memory"] = {
            "kind": s.memory, "checkpoints": s.checkpoints,
            "checkpoint_bytes": s.checkpoint_bytes_each,
            "checkpoint_s": round(s.checkpoint_s + s.draft_checkpoint_s, 4),
            "replayed_tokens": s.replayed_tokens, "replay_s": round(s.replay_s, 4),
            "trees_as_chains": s.trees_as_chains,
        }
    return out


def stats_header(stats: dict[str, Any]) -> str:
    """``mode=chain; drafted=40; accepted=31; acceptance=0.775; mean_accepted_per_step=2.58``."""
    keys = ("mode", "drafted", "accepted", "acceptance", "mean_accepted_per_step", "tokens",
            "tokens_per_s")
    return "; ".join(f"{k}={stats[k]}" for k in keys)


def _finish(done: Done, calls: bool) -> str:
    """``tool_calls`` when the reply made calls and was not cut short (then ``length``)."""
    finish = FINISH[done.stop_reason]
    return "tool_calls" if calls and finish != "length" else finish


def completion(req: GenerationRequest, rid: str, model: str, prompt_tokens: int, done: Done,
               stats: dict[str, Any], entries: Sequence[TokenLogprob] = ()) -> dict[str, Any]:
    """The whole non-streaming reply (``entries``: its tokens' log-probabilities, if asked)."""
    fmt = req.structure.format
    if req.kind == "text":
        choice = {"index": 0, "text": done.text, "finish_reason": FINISH[done.stop_reason],
                  "logprobs": text_logprobs(entries) if req.logprobs is not None else None}
    else:
        content, calls = parse_reply(fmt, done.text) if fmt else (done.text, [])
        message: dict[str, Any] = {"role": "assistant",
                                   "content": content if calls else done.text}
        if calls:
            message["tool_calls"] = [c.to_openai() for c in calls]
        choice = {"index": 0, "message": message, "finish_reason": _finish(done, bool(calls)),
                  "logprobs": chat_logprobs(entries) if req.logprobs is not None else None}
    return {
        "id": rid, "object": "chat.completion" if req.kind == "chat" else "text_completion",
        "created": int(time.time()), "model": model, "choices": [choice],
        "usage": usage(prompt_tokens, done), "specula": stats,
    }


def _call_delta(d: CallDelta) -> dict[str, Any]:
    if d.id is not None:  # a call's first piece: what the client needs to open it
        return {"index": d.index, "id": d.id, "type": "function",
                "function": {"name": d.name, "arguments": d.arguments}}
    return {"index": d.index, "function": {"arguments": d.arguments}}


def chunk(req: GenerationRequest, rid: str, model: str, text: str = "",
          finish: str | None = None, role: bool = False, *,
          delta: dict[str, Any] | None = None, logprobs: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    """One streamed piece (``role`` marks a chat stream's first chunk; ``delta`` replaces
    the chat delta, as for tool calls)."""
    c: dict[str, Any]
    if req.kind == "text":
        c = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}
    else:
        d = delta if delta is not None else ({"content": text} if text else {})
        if role:
            d = {"role": "assistant", "content": text}
        c = {"index": 0, "delta": d, "logprobs": logprobs, "finish_reason": finish}
    return {
        "id": rid, "object": "chat.completion.chunk" if req.kind == "chat" else "text_completion",
        "created": int(time.time()), "model": model, "choices": [c], **extra,
    }


class StreamChoices:
    """Turns the job's text pieces into stream chunks: content, tool-call deltas read by the
    template's family format, and log-probabilities attached to the chunk their text is in
    (held with text that is held, as a call's closing tag)."""

    def __init__(self, req: GenerationRequest, rid: str, model: str) -> None:
        self.req, self.rid, self.model = req, rid, model
        fmt = req.structure.format
        self.calls = CallStream(fmt) if fmt is not None and req.kind == "chat" else None
        self._held: list[TokenLogprob] = []
        self._offset = 0  # completions: where the next token starts in the reply text

    def _logprobs(self) -> dict[str, Any] | None:
        if self.req.logprobs is None:
            return None
        entries, self._held = self._held, []
        if self.req.kind == "chat":
            return {"content": chat_content(entries), "refusal": None}
        lp = text_logprobs(entries, self._offset)
        self._offset += sum(len(t) for t in lp["tokens"])
        return lp

    def _chunks(self, deltas: Sequence[CallDelta]) -> list[dict[str, Any]]:
        out = []
        for d in deltas:
            delta = {"tool_calls": [_call_delta(d)]} if d.is_call else None
            out.append(chunk(self.req, self.rid, self.model, d.content or "", delta=delta,
                             logprobs=self._logprobs()))
        return out

    def piece(self, text: str, entries: Sequence[TokenLogprob]) -> list[dict[str, Any]]:
        self._held.extend(entries)
        if self.calls is None:
            return self._chunks([CallDelta(content=text)])
        return self._chunks(self.calls.feed(text))

    def end(self, done: Done, **extra: Any) -> list[dict[str, Any]]:
        """What the end of the reply releases, then the chunk with the finish reason."""
        out = self._chunks(self.calls.finish()) if self.calls is not None else []
        made_calls = self.calls is not None and bool(self.calls.calls)
        finish = _finish(done, made_calls) if self.req.kind == "chat" else FINISH[done.stop_reason]
        out.append(chunk(self.req, self.rid, self.model, finish=finish,
                         logprobs=self._logprobs() if self._held else None, **extra))
        return out


def usage_chunk(req: GenerationRequest, rid: str, model: str, usage_: dict[str, int],
                stats: dict[str, Any]) -> dict[str, Any]:
    """The extra last chunk that ``stream_options.include_usage`` asks for (no choices)."""
    c = chunk(req, rid, model, usage=usage_, specula=stats)
    c["choices"] = []
    return c


def sse(obj: dict[str, Any] | str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()
