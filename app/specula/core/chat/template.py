"""Render a conversation with the model's own chat template (sandboxed, bounded Jinja).

A chat template is code that came with a downloaded file, and it runs on the
engine's thread: one that loops for ever or builds a gigabyte string would stall
every later reply. So compiling and rendering are bounded
(:mod:`specula.core.chat.bounded_jinja`): the source's size, a step and CPU-time
budget charged by every loop, call and filter, and the size of every value and of
the output, predicted before it is built. Whatever goes wrong (a syntax error when
the template is compiled, an undefined name, ``raise_exception``, a sandbox refusal,
a limit) comes out as a :class:`TemplateError` with a sentence a user can read. A model without a
template gets a plain "role: content" layout.

The environment mirrors llama-cpp-python's ``Jinja2ChatFormatter`` and
Transformers (immutable sandbox, ``trim_blocks``, ``lstrip_blocks``,
loop controls, ``{% generation %}``, ``tojson``, ``raise_exception``,
``strftime_now``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from specula.core.chat.bounded_jinja import (
    MAX_OUTPUT_CHARS,
    MAX_RENDER_SECONDS,
    BoundedTemplate,
    TemplateError,
    TemplateLimitError,
    TemplateRefusal,
)
from specula.core.chat.tool_calls import ToolFormat, detect_format

__all__ = [
    "MAX_OUTPUT_CHARS",
    "MAX_RENDER_SECONDS",
    "ChatTemplate",
    "Model",
    "TemplateError",
    "TemplateLimitError",
    "TemplateRefusal",
]


class Model(Protocol):
    """What rendering needs from a loaded model (the engine's ``Model`` has it);
    a protocol, so that chat sits below the engine and never imports it."""

    bos: int
    eos: int
    add_bos: bool

    def token_text(self, token: int) -> str: ...

    def chat_template(self) -> str | None: ...

    def tokenize(self, text: str, *, add_special: bool = ..., parse_special: bool = ...) -> list[int]: ...


class ChatTemplate:
    """A model's chat template, compiled once; raises :class:`TemplateError` when it
    does not compile (the engine turns that into its load error)."""

    def __init__(self, template: str | None, bos_text: str, eos_text: str, add_bos: bool,
                 *, max_seconds: float = MAX_RENDER_SECONDS,
                 max_chars: int = MAX_OUTPUT_CHARS) -> None:
        self.source = template
        self.bos_text = bos_text
        self.eos_text = eos_text
        self.add_bos = add_bos
        self._tpl = (BoundedTemplate(template, max_seconds=max_seconds, max_chars=max_chars)
                     if template else None)

    @classmethod
    def for_model(cls, model: Model) -> ChatTemplate:
        bos = model.token_text(model.bos) if model.bos >= 0 else ""
        eos = model.token_text(model.eos) if model.eos >= 0 else ""
        return cls(model.chat_template(), bos, eos, model.add_bos)

    @property
    def tool_format(self) -> ToolFormat | None:
        """The family of tool calls this template speaks, or None (see :mod:`.tool_calls`)."""
        return detect_format(self.source)

    def render(self, messages: Sequence[Mapping[str, Any]],
               tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        """The prompt text; raises :class:`TemplateError` (never hangs, never runs out of memory).

        ``tools`` (OpenAI's ``[{"type": "function", "function": {...}}]``) reach the
        template as ``tools``, as Transformers' ``apply_chat_template(tools=...)`` passes
        them; messages may carry ``tool_calls`` (assistant) and ``tool_call_id`` (tool).
        """
        if self._tpl is None:
            body = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
            return body + "assistant:"
        return self._tpl.render(
            messages=[dict(m) for m in messages], tools=list(tools) if tools else None,
            bos_token=self.bos_text, eos_token=self.eos_text, add_generation_prompt=True,
        )

    def tokenize(self, model: Model, messages: Sequence[Mapping[str, Any]],
                 tools: Sequence[Mapping[str, Any]] | None = None) -> list[int]:
        text = self.render(messages, tools)
        # Templates that write the BOS text themselves must not get a second one.
        add_special = self.add_bos and not (self.bos_text and text.startswith(self.bos_text))
        return model.tokenize(text, add_special=add_special, parse_special=True)
