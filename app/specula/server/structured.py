"""Structured replies: ``response_format``, a GBNF grammar, ``tools`` and ``tool_choice``.

Each becomes a grammar the engine enforces at every position the target verifies
(``SamplingParams.grammar``), in every mode, draft or not, so a structured reply is
as fast as any other and the same text as plain decoding:

* ``{"type": "json_object"}``: any JSON object; ``{"type": "json_schema",
  "json_schema": {"name", "schema", "strict"}}``: the schema, through the engine's
  converter (core/engine/grammar/json_schema.py: every keyword enforced or refused); a
  schema it cannot enforce, or one past a limit, is a 400 naming
  ``response_format.json_schema.schema`` and the keyword, before it is queued.
* ``"specula": {"grammar": "<GBNF>"}``: a grammar of the client's own (root rule
  ``root``), its cost bounded (size, nesting, repetitions) before the request is
  queued and parsed over the target's vocabulary before any token.
* ``tools`` go to the model's own chat template; ``tool_choice`` "required" or a
  named function forces a call in the template's family format (the arguments by
  the function's ``parameters`` schema), "auto" lets the model choose (its reply is
  parsed into calls), "none" leaves the tools out of the prompt altogether.
  ``response_format`` excludes tools (a JSON reply is not a call), and so does a
  GBNF with a forced call; a GBNF with "auto" shapes a reply that is still read for
  calls.

The tools' family is known only once the template is (the HTTP thread has it when
the host published it, else the engine thread), so :func:`parse_structure` checks
the body and :func:`bind_tools` finishes the job against a template.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from specula.core.chat.tool_calls import ToolFormat, known_families
from specula.core.engine.grammar.json_schema_limits import GrammarLimitError, check_gbnf
from specula.core.structured import (
    StructureError,
    forced_call_grammar,
    response_format_grammar,
)
from specula.server.errors import bad

if TYPE_CHECKING:
    from specula.core.chat.template import ChatTemplate
    from specula.core.engine.sampling.rules import SamplingParams

CHOICES = ("auto", "none", "required")
MAX_TOOLS = 128  # as the OpenAI API


@dataclass
class Structure:
    """What a request asks of its reply's shape (validated, not yet bound to a template)."""

    grammar: str | None = None  # from response_format or specula.grammar
    grammar_param: str = ""  # the field it came from, for errors
    tools: list[dict[str, Any]] | None = None
    tool_choice: str = "auto"  # auto | none | required | function
    function: str | None = None  # the named function of tool_choice {"type": "function", ...}
    parallel: bool = False
    format: ToolFormat | None = None  # set by bind_tools when the reply is parsed for calls

    @property
    def wants_tools(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"


def _core(exc: StructureError) -> Exception:
    return bad(exc.param, str(exc), exc.code)


def _response_format(body: dict[str, Any]) -> str | None:
    try:
        return response_format_grammar(body.get("response_format"))
    except StructureError as exc:
        raise _core(exc) from None


def _gbnf(body: dict[str, Any]) -> str | None:
    extra = body.get("specula")
    if not isinstance(extra, dict) or extra.get("grammar") is None:
        return None
    text = extra["grammar"]
    if not isinstance(text, str) or not text.strip():
        raise bad("specula.grammar", "'specula.grammar' must be a GBNF grammar (a string).",
                  "invalid_type")
    # Its cost is bounded here, on the HTTP thread, before it is queued (size, nesting,
    # repetitions: json_schema_limits.check_gbnf), so a hostile grammar never reaches the
    # engine. It is parsed once, on the engine thread over the target's vocabulary
    # (server/jobs.py), a 400 naming this field before any token: a parse here could not
    # resolve the vocabulary's token references (<|im_start|>).
    try:
        check_gbnf(text)
    except GrammarLimitError as exc:
        raise bad("specula.grammar", f"'specula.grammar': {exc}", "invalid_grammar") from None
    return text


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise bad("tools", "'tools' must be a list of tools.", "invalid_type")
    if len(tools) > MAX_TOOLS:
        raise bad("tools", f"'tools' takes at most {MAX_TOOLS} tools.")
    names: set[str] = set()
    out = []
    for i, tool in enumerate(tools):
        p = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function" \
                or not isinstance(tool.get("function"), dict):
            raise bad(p, f"'{p}' must be {{\"type\": \"function\", \"function\": {{...}}}}.",
                      "invalid_type")
        fn = tool["function"]
        name = fn.get("name")
        if not isinstance(name, str) or not name or len(name) > 64 or \
                not all(c.isalnum() or c in "_-" for c in name):
            raise bad(f"{p}.function.name", f"'{p}.function.name' must be 1 to 64 letters, "
                      "digits, underscores or dashes.")
        if name in names:
            raise bad(f"{p}.function.name", f"Two tools are named '{name}'.")
        names.add(name)
        if fn.get("parameters") is not None and not isinstance(fn["parameters"], dict):
            raise bad(f"{p}.function.parameters", f"'{p}.function.parameters' must be a JSON "
                      "schema object.", "invalid_type")
        if fn.get("description") is not None and not isinstance(fn["description"], str):
            raise bad(f"{p}.function.description", f"'{p}.function.description' must be a "
                      "string.", "invalid_type")
        out.append({"type": "function", "function": dict(fn)})
    return out


def _tool_choice(body: dict[str, Any], tools: list[dict[str, Any]] | None) -> tuple[str, str | None]:
    choice = body.get("tool_choice")
    if choice is None:
        return "auto", None
    if isinstance(choice, str):
        if choice not in CHOICES:
            raise bad("tool_choice", f"'tool_choice' must be one of {', '.join(CHOICES)} or "
                      "{\"type\": \"function\", \"function\": {\"name\": ...}}.")
        if choice == "required" and not tools:
            raise bad("tool_choice", "'tool_choice' is 'required' but no 'tools' were given.")
        return choice, None
    fn = choice.get("function") if isinstance(choice, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or not isinstance(name, str):
        raise bad("tool_choice", "'tool_choice' must be a string or {\"type\": \"function\", "
                  "\"function\": {\"name\": ...}}.", "invalid_type")
    if not any(t["function"]["name"] == name for t in tools or []):
        raise bad("tool_choice", f"'tool_choice' names the function '{name}', which is not "
                  "in 'tools'.")
    return "function", name


def parse_structure(body: dict[str, Any], kind: str) -> Structure:
    """The body's structure fields, checked (400s name the field); no template needed."""
    rf = _response_format(body)
    gbnf = _gbnf(body)
    if rf is not None and gbnf is not None:
        raise bad("specula.grammar", "Give either 'response_format' or 'specula.grammar', "
                  "not both.")
    s = Structure(grammar=rf or gbnf,
                  grammar_param="response_format" if rf is not None else "specula.grammar")
    if kind != "chat":
        for name in ("tools", "tool_choice"):
            if body.get(name) is not None:
                raise bad(name, f"'{name}' belongs to /v1/chat/completions.", "unsupported_value")
        return s
    s.tools = _tools(body)
    s.tool_choice, s.function = _tool_choice(body, s.tools)
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad("parallel_tool_calls", "'parallel_tool_calls' must be a boolean.",
                  "invalid_type")
    s.parallel = bool(parallel)
    # A JSON reply and a tool call exclude each other, and a forced call is a grammar of its
    # own; a client's GBNF with tool_choice "auto" is read for calls like any reply.
    forced = s.tool_choice in ("required", "function")
    if s.wants_tools and s.grammar is not None and (rf is not None or forced):
        raise bad(s.grammar_param, f"'{s.grammar_param}' and 'tools' both constrain the reply: "
                  "give one, or set 'tool_choice' to 'none'.", "unsupported_value")
    return s


class WithStructure(Protocol):
    """What this module needs of a request (schemas.GenerationRequest, which imports this
    module: naming it here would make the two a circle)."""

    structure: Structure
    sampling: SamplingParams


def bind_tools(req: WithStructure, template: ChatTemplate) -> None:
    """Tie the request's tools to ``template``'s family: the format its reply is read
    in, and for "required" or a named function the grammar that forces the call.

    A 400 when tools are asked for and the template speaks no family Specula knows.
    """
    s = req.structure
    if not s.wants_tools:
        return
    fmt = template.tool_format
    if fmt is None:
        raise bad("tools", "This model's chat template has no tool-call format Specula knows "
                  f"(it reads {known_families()}), so it cannot call tools; send the request "
                  "without 'tools' or with 'tool_choice': 'none'.", "unsupported_value")
    s.format = fmt
    if s.tool_choice in ("required", "function"):
        assert s.tools is not None
        try:
            grammar, root = forced_call_grammar(fmt, s.tools, s.function, s.parallel)
        except StructureError as exc:
            raise _core(exc) from None
        req.sampling = replace(req.sampling, grammar=grammar, grammar_root=root)


def prompt_tools(req: WithStructure) -> list[dict[str, Any]] | None:
    """The tools the template shows the model ("none" shows none)."""
    return req.structure.tools if req.structure.wants_tools else None
