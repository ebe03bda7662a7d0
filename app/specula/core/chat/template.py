"""Render a conversation with the model's own chat template (sandboxed Jinja).

llama-cpp-python's ``Jinja2ChatFormatter`` renders in an immutable sandbox
with the helpers Hugging Face templates expect (raise_exception, strftime_now,
tojson). A model without a template gets a plain "role: content" layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


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
    def __init__(self, template: str | None, bos_text: str, eos_text: str, add_bos: bool) -> None:
        self.source = template
        self.bos_text = bos_text
        self.add_bos = add_bos
        self._fmt: Any = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            self._fmt = Jinja2ChatFormatter(template=template, eos_token=eos_text, bos_token=bos_text)

    @classmethod
    def for_model(cls, model: Model) -> ChatTemplate:
        bos = model.token_text(model.bos) if model.bos >= 0 else ""
        eos = model.token_text(model.eos) if model.eos >= 0 else ""
        return cls(model.chat_template(), bos, eos, model.add_bos)

    def render(self, messages: Sequence[dict[str, str]]) -> str:
        if self._fmt is None:
            body = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
            return body + "assistant:"
        return str(self._fmt(messages=list(messages)).prompt)

    def tokenize(self, model: Model, messages: Sequence[dict[str, str]]) -> list[int]:
        text = self.render(messages)
        # Templates that write the BOS text themselves must not get a second one.
        add_special = self.add_bos and not (self.bos_text and text.startswith(self.bos_text))
        return model.tokenize(text, add_special=add_special, parse_special=True)
