"""A structured reply's grammar: ``response_format`` and forced tool calls, as GBNF.

Shared by the server (``specula serve``) and the benchmark, which both turn an
OpenAI-style ``response_format`` or a ``tool_choice`` that forces a call into the
grammar the engine enforces (``SamplingParams.grammar`` / ``grammar_root``). The
conversion of a JSON schema is the engine's (core/engine/grammar/json_schema.py: every
keyword enforced or refused by name, bounds capped); the call blocks
around a forced call are the chat family's (:mod:`specula.core.chat.tool_calls`).
Every refusal is a :class:`StructureError` naming the request field at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specula.core.chat.tool_calls import ToolFormat, call_grammar, call_schema
from specula.core.engine.grammar.compile import (
    JSON_OBJECT_GRAMMAR,
    GrammarError,
    json_schema_grammar,
)


class StructureError(ValueError):
    """A field that cannot become a grammar; ``param`` names it (``response_format.type``)."""

    def __init__(self, param: str, message: str, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def schema_grammar(schema: Any, param: str) -> str:
    """GBNF for JSON that validates against ``schema`` (refusals name ``param``)."""
    if not isinstance(schema, dict):
        raise StructureError(param, f"'{param}' must be a JSON schema object.", "invalid_type")
    try:
        return json_schema_grammar(schema)
    except GrammarError as exc:
        raise StructureError(param, f"'{param}': {exc}", "invalid_grammar") from None


def response_format_grammar(rf: Any) -> str | None:
    """The grammar of an OpenAI ``response_format`` (None: free text)."""
    if rf is None:
        return None
    if not isinstance(rf, dict):
        raise StructureError("response_format", "'response_format' must be an object.",
                             "invalid_type")
    kind = rf.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return JSON_OBJECT_GRAMMAR
    if kind != "json_schema":
        raise StructureError("response_format.type", "'response_format.type' must be one of "
                             "text, json_object, json_schema.")
    spec = rf.get("json_schema")
    if not isinstance(spec, dict):
        raise StructureError("response_format.json_schema", "'response_format.json_schema' "
                             "must be an object with 'name' and 'schema'.", "invalid_type")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise StructureError("response_format.json_schema.name",
                             "'response_format.json_schema.name' must be a non-empty string.")
    if "strict" in spec and not isinstance(spec["strict"], (bool, type(None))):
        raise StructureError("response_format.json_schema.strict",
                             "'response_format.json_schema.strict' must be a boolean.",
                             "invalid_type")
    if spec.get("schema") is None:
        return JSON_OBJECT_GRAMMAR
    return schema_grammar(spec["schema"], "response_format.json_schema.schema")


def forced_call_grammar(fmt: ToolFormat, tools: Sequence[dict[str, Any]],
                        function: str | None = None, parallel: bool = False) -> tuple[str, str]:
    """(GBNF, root) of a reply that is a call of one of ``tools`` (or of ``function``)
    in ``fmt``'s blocks, its arguments valid for the function's ``parameters``."""
    for i, tool in enumerate(tools):  # a schema the grammar cannot take, by name
        fn = tool["function"]
        if fn.get("parameters") and function in (None, fn["name"]):
            schema_grammar(fn["parameters"], f"tools[{i}].function.parameters")
    obj = schema_grammar(call_schema(tools, function), "tools")
    return call_grammar(fmt, obj, "root", parallel and function is None)
