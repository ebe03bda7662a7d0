"""The work one request does on the engine thread, reported through a queue.

Tokenizing and the context-length check happen here, on the engine thread,
because only the owner thread may touch the Engine. The HTTP thread waits for
the first message: ``("error", OpenAIError)`` becomes a 4xx response even for
a streaming request (no header has been sent yet); ``("start", n)`` means the
reply is under way, followed by ``("text", str)`` pieces and one
``("done", Done)`` (or ``("fail", message)`` if the engine raised).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, TokenEvent
from specula.server.queue import Job
from specula.server.schemas import GenerationRequest, OpenAIError

log = logging.getLogger("specula.server")

Message = tuple[str, Any]


def _tokens(engine: Engine, req: GenerationRequest) -> list[int]:
    model = engine.target_model
    if model is None:
        raise OpenAIError(503, "No model is loaded.", code="model_not_loaded", type="server_error")
    if req.kind == "chat":
        return engine.tokenize_chat(req.messages)
    if isinstance(req.prompt, list):
        if max(req.prompt) >= model.n_vocab:
            raise OpenAIError(400, f"Token ids must be below the vocabulary size {model.n_vocab}.",
                              param="prompt", code="invalid_value")
        return list(req.prompt)
    return model.tokenize(req.prompt)


def _check_length(engine: Engine, req: GenerationRequest, tokens: list[int]) -> None:
    param = "messages" if req.kind == "chat" else "prompt"
    if not tokens:
        raise OpenAIError(400, "The prompt is empty.", param=param, code="invalid_value")
    n_ctx = engine.n_ctx
    if len(tokens) >= n_ctx:
        raise OpenAIError(
            400, f"This model's maximum context length is {n_ctx} tokens, but the prompt has "
            f"{len(tokens)} tokens. Shorten the prompt.", param=param,
            code="context_length_exceeded")


def generation_job(req: GenerationRequest, out: queue.Queue[Message],
                   cancel: threading.Event) -> Job:
    """A job that runs ``req`` and puts its messages on ``out``."""

    def job(engine: Engine) -> None:
        if cancel.is_set():  # the client left while the request waited in the queue
            out.put(("error", OpenAIError(499, "The client closed the connection.",
                                          code="client_closed")))
            return
        try:
            tokens = _tokens(engine, req)
            _check_length(engine, req, tokens)
        except OpenAIError as exc:
            out.put(("error", exc))
            return
        except Exception as exc:
            log.exception("tokenizing a request failed")
            out.put(("error", OpenAIError(500, f"Tokenizing failed: {exc}", type="server_error")))
            return
        out.put(("start", len(tokens)))
        try:
            for ev in engine.generate_tokens(tokens, req.sampling, req.spec, cancel):
                if isinstance(ev, TokenEvent):
                    if ev.text:
                        out.put(("text", ev.text))
                elif isinstance(ev, Done):
                    out.put(("done", ev))
                    return
        except Exception as exc:
            log.exception("generation failed")
            out.put(("fail", f"Generation failed: {exc}"))
            return
        out.put(("fail", "The engine ended the reply without a result."))

    return job

