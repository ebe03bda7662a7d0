"""Render a chat template on the request's own thread, within a time and size limit.

A chat template comes from the model file, so it is untrusted code: two nested
``range(100000)`` loops run for hours, ``'A' * 300000000`` builds a string
larger than any context. Rendering on the engine thread would stall every
later request behind it, so the server renders on the HTTP thread that asked,
with a deadline, and hands the engine only the finished text.

The deadline is enforced by a trace function on this thread only: Jinja
compiles a template to Python code (file name ``<template>``), and every
line of it, every generator resume and every call it makes passes through
the tracer, which raises once the time is up. One C-level operation (a
single huge string multiplication) cannot be interrupted; the size check
after rendering refuses its result before anything tokenizes it.

Whose fault a failure is decides its status. A request larger than the context
is the client's: before rendering, its message count and the characters of its
messages and tools are set against the context (each message takes at least one
token, a token is at most :data:`MAX_CHARS_PER_TOKEN` characters) and against
the renderer's output cap, and refused as a 400 ``context_length_exceeded``.
A template's ``raise_exception`` refuses the conversation (a turn order it does
not accept): a 400 that quotes it. Anything else a template does wrong with a
request within those bounds is the model's: a 500.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from specula.core.chat.template import MAX_OUTPUT_CHARS, TemplateRefusal
from specula.core.chat.template_sizes import text_size
from specula.server.errors import OpenAIError

log = logging.getLogger("specula.server")

RENDER_TIMEOUT_S = 2.0  # real templates render in milliseconds
MAX_CHARS_PER_TOKEN = 64  # no vocabulary's tokens are longer on average
TEMPLATE_FILE = "<template>"


class RenderTimeout(Exception):
    """The template ran past its deadline (raised inside it by the tracer)."""


class _Deadline:
    """The trace functions of one render. Frames of the render that outlive it (a
    generator closed later by the garbage collector) keep their local tracer, so it
    goes quiet once the render is over or has been stopped: it raises only once."""

    def __init__(self, timeout_s: float) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.active = True

    def _check(self) -> None:
        if self.active and time.monotonic() > self.deadline:
            self.active = False
            raise RenderTimeout

    def local(self, frame: FrameType, event: str, arg: Any) -> Any:
        self._check()
        return self.local if self.active else None

    def tracer(self, frame: FrameType, event: str, arg: Any) -> Any:
        self._check()
        if not self.active:
            return None
        # Line events only inside the template's own code: cheap for everything else.
        return self.local if frame.f_code.co_filename == TEMPLATE_FILE else None


def run_with_deadline(fn: Callable[[], str], timeout_s: float) -> str:
    """``fn()``, raising :class:`RenderTimeout` once ``timeout_s`` has passed."""
    previous = sys.gettrace()
    limit = _Deadline(timeout_s)
    sys.settrace(limit.tracer)
    try:
        return fn()
    finally:
        limit.active = False
        sys.settrace(previous)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def _template_failure(exc: Exception, timeout_s: float) -> OpenAIError:
    """The error one request gets; the renderer may have wrapped the deadline's exception."""
    if isinstance(exc, TemplateRefusal):
        return OpenAIError(400, f"The model's chat template refused this conversation: "
                           f"{exc.reason}", param="messages", code="template_refused")
    if any(isinstance(e, RenderTimeout) for e in _causes(exc)):
        log.warning("the chat template ran past %.1f s; request refused", timeout_s)
        return OpenAIError(500, f"The model's chat template did not finish rendering within "
                           f"{timeout_s:g} s; the template in this GGUF file is broken or hostile.",
                           code="template_timeout", type="server_error")
    if isinstance(exc, MemoryError):
        return OpenAIError(500, "The model's chat template ran out of memory while rendering.",
                           code="template_error", type="server_error")
    log.warning("the chat template failed: %s: %s", type(exc).__name__, exc)
    return OpenAIError(500, f"The model's chat template failed: {type(exc).__name__}: {exc}",
                       code="template_error", type="server_error")


def _request_chars(messages: Sequence[dict[str, Any]], tools: object) -> int:
    """The characters a template is given to spell out: message contents, tool calls'
    names and arguments, tool definitions (counted no further than past the output cap)."""
    def charge(_: int) -> None:
        return None

    total = text_size(tools, MAX_OUTPUT_CHARS, charge) if tools else 0
    for m in messages:
        total += len(m.get("content") or "")
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            total += len(fn["name"]) + text_size(fn["arguments"], MAX_OUTPUT_CHARS, charge)
        if total > MAX_OUTPUT_CHARS:
            break
    return total


def check_request_size(messages: Sequence[dict[str, Any]], tools: object, n_ctx: int) -> None:
    """A 400 ``context_length_exceeded`` for a request no render of which could fit the
    context, decided from the request alone, before any template runs."""
    if len(messages) > n_ctx:
        raise OpenAIError(400, f"The request has {len(messages):,} messages; this model's "
                          f"context of {n_ctx:,} tokens cannot hold them (every message "
                          "takes at least one token).", param="messages",
                          code="context_length_exceeded")
    chars = _request_chars(messages, tools)
    limit = min(n_ctx * MAX_CHARS_PER_TOKEN, MAX_OUTPUT_CHARS)
    if chars > limit:
        raise OpenAIError(400, f"The request's messages and tools hold at least {chars:,} "
                          f"characters, more than a prompt for this model can ({limit:,}: a "
                          f"context of {n_ctx:,} tokens of at most {MAX_CHARS_PER_TOKEN} "
                          "characters each).", param="messages", code="context_length_exceeded")


def render_prompt(render: Callable[[Sequence[dict[str, str]]], str],
                  messages: Sequence[dict[str, str]], n_ctx: int,
                  timeout_s: float = RENDER_TIMEOUT_S, tools: object = None) -> str:
    """The template's text for ``messages``, or an :class:`OpenAIError` for this request only.

    A request too large for the context is refused first (:func:`check_request_size`).
    A template that refuses the conversation (``raise_exception``) is a 400 quoting it;
    one that fails otherwise (a sandbox violation, an undefined name, a limit) is the
    model's fault, not the request's: 500. A result far longer than the context could
    hold is refused as 400 before it is tokenized.
    """
    check_request_size(messages, tools, n_ctx)
    try:
        text = run_with_deadline(lambda: render(messages), timeout_s)
    except Exception as exc:  # Jinja errors, raise_exception(), sandbox violations, MemoryError
        raise _template_failure(exc, timeout_s) from None
    limit = n_ctx * MAX_CHARS_PER_TOKEN
    if len(text) > limit:
        raise OpenAIError(400, f"The chat template rendered {len(text)} characters, far more "
                          f"than this model's context of {n_ctx} tokens can hold.",
                          param="messages", code="context_length_exceeded")
    return text
