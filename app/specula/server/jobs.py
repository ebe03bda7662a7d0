"""The work one request does on the engine thread, reported through a queue.

Tokenizing and the context-length check happen here, on the engine thread,
because only the owner thread may touch the Engine. The chat template is
rendered before, on the HTTP thread (server/render.py), when the host
published it; otherwise here, within the same time and size limit. The HTTP thread waits for
the first message: ``("error", OpenAIError)`` becomes a 4xx response even for
a streaming request (no header has been sent yet); ``("start", n)`` means the
reply is under way, followed by ``("text", (str, [TokenLogprob]))`` pieces (the
log-probabilities only when the request asked; a token whose text is still
pending joins the next piece) and one ``("done", Done)`` (or ``("fail", message)``
if the engine raised).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from specula.core.chat.template import ChatTemplate
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, TokenEvent
from specula.core.engine.grammar.compile import GrammarError
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.native.llama import Model
from specula.server.errors import OpenAIError
from specula.server.logprobs import TokenLogprob
from specula.server.queue import Job
from specula.server.render import RENDER_TIMEOUT_S, render_prompt
from specula.server.schemas import GenerationRequest
from specula.server.structured import bind_tools, prompt_tools

log = logging.getLogger("specula.server")

Message = tuple[str, Any]


def _tokenize_rendered(model: Model, template: ChatTemplate, text: str) -> list[int]:
    # As ChatTemplate.tokenize: templates that write the BOS text themselves get no second one.
    add_special = template.add_bos and not (template.bos_text and text.startswith(template.bos_text))
    return model.tokenize(text, add_special=add_special, parse_special=True)


def _chat_tokens(engine: Engine, model: Model, req: GenerationRequest,
                 template: ChatTemplate | None, timeout_s: float) -> list[int]:
    if req.rendered is not None and template is not None \
            and model.chat_template() == template.source:
        return _tokenize_rendered(model, template, req.rendered)
    # No published template, or the pair changed since: render here, bounded all the same.
    template = ChatTemplate.for_model(model)
    bind_tools(req, template)
    return _tokenize_rendered(model, template, render_chat(template, req, engine.n_ctx, timeout_s))


def render_chat(template: ChatTemplate, req: GenerationRequest, n_ctx: int,
                timeout_s: float) -> str:
    """The request's messages (and tools) through ``template``, bounded (server/render.py)."""
    tools = prompt_tools(req)
    return render_prompt(lambda msgs: template.render(msgs, tools), req.messages, n_ctx, timeout_s,
                         tools)


def _logprob(model: Model, ev: TokenEvent) -> TokenLogprob | None:
    if ev.logprob is None:
        return None
    top = tuple((model.piece(t), lp) for t, lp in ev.top_logprobs or ())
    return TokenLogprob(model.piece(ev.token_id), ev.logprob, top)


def _tokens(engine: Engine, req: GenerationRequest, template: ChatTemplate | None,
            timeout_s: float) -> list[int]:
    model = engine.target_model
    if model is None:
        raise OpenAIError(503, "No model is loaded.", code="model_not_loaded", type="server_error")
    if req.kind == "chat":
        return _chat_tokens(engine, model, req, template, timeout_s)
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


def _open_grammar(engine: Engine, req: GenerationRequest) -> GrammarState | None:
    """The grammar parsed over the target's vocabulary (token references need it), the
    one parse of the request (the reply uses this state): a 400 before the reply
    starts, never a failure in the middle of it."""
    grammar = req.sampling.grammar
    if not grammar:
        return None
    try:
        return engine.open_grammar(grammar, req.sampling.grammar_root)
    except GrammarError as exc:
        param = req.structure.grammar_param if req.structure.grammar else "tools"
        raise OpenAIError(400, f"'{param}': {exc}", param=param, code="invalid_grammar") from None


def generation_job(req: GenerationRequest, out: queue.Queue[Message], cancel: threading.Event,
                   template: ChatTemplate | None = None,
                   render_timeout_s: float = RENDER_TIMEOUT_S) -> Job:
    """A job that runs ``req`` and puts its messages on ``out``.

    ``template`` is the one ``req.rendered`` came from: used only while the engine
    still has a target with that template.
    """

    def job(engine: Engine) -> None:
        if cancel.is_set():  # the client left while the request waited in the queue
            out.put(("error", OpenAIError(499, "The client closed the connection.",
                                          code="client_closed")))
            return
        try:
            tokens = _tokens(engine, req, template, render_timeout_s)
            _check_length(engine, req, tokens)
            grammar = _open_grammar(engine, req)
        except OpenAIError as exc:
            out.put(("error", exc))
            return
        except Exception as exc:
            log.exception("tokenizing a request failed")
            out.put(("error", OpenAIError(500, f"Tokenizing failed: {exc}", type="server_error")))
            return
        out.put(("start", len(tokens)))
        model = engine.target_model
        assert model is not None
        pending: list[TokenLogprob] = []  # tokens whose text has not come out yet
        try:
            for ev in engine.generate_tokens(tokens, req.sampling, req.spec, cancel, grammar):
                if isinstance(ev, TokenEvent):
                    lp = _logprob(model, ev) if req.logprobs is not None else None
                    if lp is not None:
                        pending.append(lp)
                    if ev.text:
                        out.put(("text", (ev.text, pending)))
                        pending = []
                elif isinstance(ev, Done):
                    if pending:  # a last character cut by the end: its tokens still count
                        out.put(("text", ("", pending)))
                    out.put(("done", ev))
                    return
        except Exception as exc:
            log.exception("generation failed")
            out.put(("fail", f"Generation failed: {exc}"))
            return
        finally:  # the reply closes it as it ends; this covers one that never started
            if grammar is not None:
                grammar.close()
        out.put(("fail", "The engine ended the reply without a result."))

    return job

