"""Tool calls in a model's own format: which family a chat template speaks, parsing a reply
into calls (whole or as it streams), and the grammar that forces a call.

A model is trained to call tools in one textual format, and its chat template both
describes the tools to it and renders earlier calls in that format; the reply is plain
text that has to be read back the same way. Specula knows these families:

* **Hermes / Qwen** (Qwen2.5, Qwen2.5-Coder, Qwen3, QwQ, Hermes 2 Pro and 3, and the many
  fine-tunes that copied their template): each call is a block
  ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``; text outside the
  blocks is the reply's content. A template belongs to it when it writes ``<tool_call>``.

A template that writes none of the known markers is refused when a request asks for
tools (the server answers 400 saying so) rather than guessed at: a wrong guess would
hand the model a format it was never trained on and return its calls as text.

The same incremental parser (:class:`CallStream`) serves streamed and whole replies,
so that the two always agree: arguments stream out as the model writes them (the
JSON value is scanned, string escapes and nesting included, so its closing brace is
told from the block's), and a block that cannot be read as a call is given back as
content, never lost.

``tool_choice`` "required" and a named function are enforced by a grammar
(:func:`call_grammar`): the call object is described as a JSON schema (the function's
name as a constant, its ``parameters`` schema for the arguments), and the caller turns
that schema into GBNF with the engine's converter, so this module stays below the
engine.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FORMATS",
    "HERMES",
    "CallDelta",
    "CallStream",
    "ToolCall",
    "ToolFormat",
    "call_grammar",
    "call_schema",
    "detect_format",
    "parse_reply",
]


@dataclass(frozen=True)
class ToolFormat:
    """One family's textual format for tool calls."""

    name: str  # shown in messages: "hermes"
    families: str  # the models that use it, for the docs and the 400's message
    marker: str  # a string only this family's templates write
    open: str  # opens one call in a reply
    close: str  # ... and closes it
    separator: str = "\n"  # between two calls of one reply


HERMES = ToolFormat(
    name="hermes", families="Hermes / Qwen (Qwen2.5, Qwen3, Hermes 2 Pro / 3)",
    marker="<tool_call>", open="<tool_call>", close="</tool_call>",
)

FORMATS: tuple[ToolFormat, ...] = (HERMES,)


def detect_format(template: str | None) -> ToolFormat | None:
    """The tool-call family of a chat template's source, or None when it is none we know."""
    if not template:
        return None
    return next((f for f in FORMATS if f.marker in template), None)


def known_families() -> str:
    return "; ".join(f.families for f in FORMATS)


@dataclass(frozen=True)
class ToolCall:
    """One call as the OpenAI API returns it: ``arguments`` is JSON text, as the model wrote it."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class CallDelta:
    """One streamed piece: ``content`` text, or a piece of call ``index`` (its first piece
    carries ``id`` and ``name``; later ones only ``arguments`` text)."""

    content: str | None = None
    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""

    @property
    def is_call(self) -> bool:
        return self.content is None


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


_HEAD = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*')


class _ValueScanner:
    """Finds where one JSON value ends in text fed piece by piece (nesting and strings)."""

    def __init__(self) -> None:
        self.depth = 0
        self.started = False
        self.in_string = False
        self.escaped = False
        self.scalar = False
        self.done = False

    def feed(self, text: str) -> int:
        """How many characters of ``text`` belong to the value (all, unless it ended)."""
        for i, ch in enumerate(text):
            if not self.started:
                if ch.isspace():
                    continue
                self.started = True
                if ch in "{[":
                    self.depth = 1
                elif ch == '"':
                    self.in_string = True
                else:
                    self.scalar = True
                continue
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
                    if self.depth == 0:
                        self.done = True
                        return i + 1
                continue
            if self.scalar:
                if ch in ",}] \t\r\n":
                    self.done = True
                    return i
                continue
            if ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.done = True
                    return i + 1
        return len(text)


def _json_string(body: str) -> str | None:
    """The value of a JSON string literal's body, or None when its escapes are not JSON's."""
    try:
        value = json.loads(f'"{body}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the longest end of ``text`` that is a beginning of ``marker``."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0


class CallStream:
    """Reads a reply as it streams: content outside call blocks, calls as deltas.

    ``feed`` takes the reply's next text and returns the deltas it completes; ``finish``
    returns what is left at the end. Trailing whitespace of content is held until more
    content follows, so the newlines around call blocks never come out as content.
    """

    def __init__(self, fmt: ToolFormat, new_id: Callable[[], str] = new_call_id) -> None:
        self.fmt = fmt
        self.new_id = new_id
        self.calls: list[ToolCall] = []
        self._state = "text"  # text | head | args | tail
        self._buf = ""
        self._space = ""  # whitespace content held back
        self._name = ""
        self._id = ""
        self._args: list[str] = []
        self._scan = _ValueScanner()

    # -- content ---------------------------------------------------------------

    def _content(self, text: str, out: list[CallDelta]) -> None:
        """Content, its trailing whitespace held until more content follows (so the
        newlines around call blocks never come out, however the text was split)."""
        body = text.rstrip()
        if body:
            out.append(CallDelta(content=self._space + body))
            self._space = ""
        self._space += text[len(body):]

    # -- states ----------------------------------------------------------------

    def feed(self, text: str) -> list[CallDelta]:
        out: list[CallDelta] = []
        self._buf += text
        while self._step(out):
            pass
        return out

    def _step(self, out: list[CallDelta]) -> bool:
        """Advance one state if the buffer allows; False when it needs more text."""
        fmt = self.fmt
        if self._state == "text":
            at = self._buf.find(fmt.open)
            if at < 0:
                keep = _partial_suffix(self._buf, fmt.open)
                self._content(self._buf[:len(self._buf) - keep], out)
                self._buf = self._buf[len(self._buf) - keep:]
                return False
            self._content(self._buf[:at], out)
            self._buf = self._buf[at + len(fmt.open):]
            self._state = "head"
            return True
        if self._state == "head":
            m = _HEAD.match(self._buf)
            name = _json_string(m.group(1)) if m else None
            if m and name is not None:
                self._name = name
                self._buf = self._buf[m.end():]
                self._state, self._args, self._scan = "args", [], _ValueScanner()
                self._id = self.new_id()
                out.append(CallDelta(index=len(self.calls), id=self._id, name=self._name))
                return True
            end = self._buf.find(fmt.close)
            if end < 0:
                return False  # not the usual head yet: wait for the whole block
            self._whole_block(self._buf[:end], out)
            self._buf = self._buf[end + len(fmt.close):]
            self._state = "text"
            return True
        if self._state == "args":
            if not self._scan.started:  # the value's own text starts at its first character
                self._buf = self._buf.lstrip()
                if not self._buf:
                    return False
            n = self._scan.feed(self._buf)
            piece, self._buf = self._buf[:n], self._buf[n:]
            if piece:
                self._args.append(piece)
                out.append(CallDelta(index=len(self.calls), arguments=piece))
            if not self._scan.done:
                return False
            self._state = "tail"
            return True
        # tail: the rest of the call object, up to the close
        end = self._buf.find(fmt.close)
        if end < 0:
            keep = _partial_suffix(self._buf, fmt.close)
            self._buf = self._buf[len(self._buf) - keep:]
            return False
        self._buf = self._buf[end + len(fmt.close):]
        self._end_call()
        self._state = "text"
        return True

    def _end_call(self) -> None:
        self.calls.append(ToolCall(self._id, self._name, "".join(self._args)))

    def _whole_block(self, block: str, out: list[CallDelta]) -> None:
        """A block whose head was not the usual one: a call if it parses as one, else content."""
        call = _call_of(block)
        if call is None:
            self._content(self.fmt.open + block + self.fmt.close, out)
            return
        self._name, args = call
        self._id, self._args = self.new_id(), [args]
        out.append(CallDelta(index=len(self.calls), id=self._id, name=self._name, arguments=args))
        self._end_call()

    def finish(self) -> list[CallDelta]:
        """The end of the reply: flush held content; an unclosed block is read as far as it goes."""
        out: list[CallDelta] = []
        if self._state == "text":
            self._content(self._buf, out)
        elif self._state == "head":
            call = _call_of(self._buf)
            if call is None:
                self._content(self.fmt.open + self._buf, out)
            else:
                self._whole_block(self._buf, out)
        elif self._state in ("args", "tail"):  # cut off inside a call: keep what was written
            self._end_call()
        if self._space and not self.calls:  # a reply without calls keeps its every character
            out.append(CallDelta(content=self._space))
        self._buf = self._space = ""
        return out


def _call_of(block: str) -> tuple[str, str] | None:
    """``(name, arguments JSON)`` of a block's text, or None when it is not a call object."""
    try:
        obj = json.loads(block)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    return obj["name"], args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def parse_reply(fmt: ToolFormat, text: str,
                new_id: Callable[[], str] = new_call_id) -> tuple[str | None, list[ToolCall]]:
    """A whole reply's content (None when there is none) and its tool calls."""
    stream = CallStream(fmt, new_id)
    deltas = stream.feed(text) + stream.finish()
    content = "".join(d.content for d in deltas if d.content is not None)
    return (content or None), stream.calls


# -- forcing a call ------------------------------------------------------------------

def call_schema(tools: Sequence[dict[str, Any]], name: str | None = None) -> dict[str, Any]:
    """The JSON schema of one call object ``{"name": ..., "arguments": ...}``: any of
    ``tools`` (OpenAI's ``[{"type": "function", "function": {...}}]``), or only ``name``."""
    variants = []
    for tool in tools:
        fn = tool["function"]
        if name is not None and fn["name"] != name:
            continue
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        variants.append({
            "type": "object",
            "properties": {"name": {"const": fn["name"]}, "arguments": params},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    if not variants:
        raise ValueError(f"no tool named {name!r}" if name else "no tools")
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


CALL_ROOT = "specula-tool-calls"


def call_grammar(fmt: ToolFormat, object_grammar: str, object_root: str = "root",
                 parallel: bool = False) -> tuple[str, str]:
    """GBNF that forces a reply made of call blocks, and its root rule's name.

    ``object_grammar`` is the GBNF of one call object (:func:`call_schema` through the
    engine's JSON-schema converter) with ``object_root`` as its root rule; the blocks
    around it are added here under a root of their own, so no rule is renamed.
    ``parallel`` allows several calls in one reply (one otherwise).
    """

    def lit(s: str) -> str:
        return json.dumps(s)  # a JSON string literal is a GBNF literal (same escapes)

    block = f"{lit(fmt.open + chr(10))} {object_root} {lit(chr(10) + fmt.close)}"
    more = f" ({lit(fmt.separator)} {block})*" if parallel else ""
    return f"{object_grammar.rstrip()}\n{CALL_ROOT} ::= {block}{more}\n", CALL_ROOT
