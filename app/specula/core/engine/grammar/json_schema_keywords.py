"""The JSON Schema vocabulary the GBNF converter (json_schema.py) knows: the keywords
it enforces or lets pass, the JSON types, the base GBNF rules every converted grammar
starts from, and reading a keyword's value (a count, a local ``$ref``)."""

from __future__ import annotations

from typing import Any

from specula.core.engine.grammar.json_schema_limits import SchemaError

# One JSON string character: raw where JSON allows it (no control character, DEL,
# surrogate, or code point llama.cpp decodes past U+10FFFF), or an escape whose \u is
# not a surrogate (a pair would count as one character, a lone one is not text).
# llama.cpp judges an unfinished UTF-8 sequence by the span of code points it could
# still become, and a negated class refuses it when any excluded code point lies in
# that span: so U+D000-U+D7FF (lead byte ED, like the surrogates) and plane 16 (lead
# byte F4, like U+110000 on) are admitted by positive classes of their own. Then a lone
# lead byte is admitted exactly when a token starting with it can be, which the
# full-vocabulary prefilter (grammar/prefilter.py) relies on.
BASE_RULES = {
    "space": '| " " | "\\n" [ \\t]{0,20}',
    "char": ('[^"\\\\\\x7F\\x00-\\x1F\\uD000-\\uDFFF\\U00100000-\\U003FFFFF] '
             '| [\\uD000-\\uD7FF] | [\\U00100000-\\U0010FFFF] | "\\\\" (["\\\\/bfnrt] | "u" hex4)'),
    "hex4": "[0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}",
    "string": '"\\"" char* "\\"" space',
    "integral-part": "[0] | [1-9] [0-9]{0,15}",
    "integer": '"-"? integral-part space',
    "number": '"-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,16})? space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": ('"{" space (string ":" space value ("," space string ":" space value)*)? '
               '"}" space'),
    "array": '"[" space (value ("," space value)*)? "]" space',
}
EMPTY = '""'  # the empty sequence
FIXED_EXPANSION = 20 + 3 + 2 + 15 + 32  # the {m,n} of the rules above

TYPES = ("string", "number", "integer", "boolean", "null", "object", "array")
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema",
                         "$comment", "deprecated", "readOnly", "writeOnly"})
STRING_KW = ("minLength", "maxLength", "pattern")
OBJECT_KW = ("properties", "required", "additionalProperties")
ARRAY_KW = ("items", "prefixItems", "minItems", "maxItems")
COMBINATORS = ("anyOf", "oneOf", "allOf")
SUPPORTED = frozenset({"type", "enum", "const", "$ref", "$defs", "definitions",
                       *STRING_KW, *OBJECT_KW, *ARRAY_KW, *COMBINATORS})
ALWAYS_OK = ANNOTATIONS | {"$defs", "definitions"}


def json_type_of(value: Any) -> set[str]:
    """The JSON Schema types ``value`` is an instance of (as the validators decide)."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"integer", "number"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    return {"object"}


def natural(schema: dict[str, Any], key: str, where: str) -> int | None:
    """``schema[key]`` as a count (an integral float allowed), None when absent."""
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(key, where, f"must be a non-negative integer, not {value!r}")
    return value


def pointer(root: Any, ref: str, where: str) -> Any:
    """The node a local ``$ref`` (a JSON pointer from ``#``) names in ``root``."""
    if not ref.startswith("#"):
        raise SchemaError("$ref", where, f"only references inside the schema ('#...') are "
                          f"supported, not {ref!r}")
    node = root
    if ref in ("#", "#/"):
        return node
    if not ref.startswith("#/"):
        raise SchemaError("$ref", where, f"{ref!r} is not a JSON pointer ('#/$defs/name')")
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError("$ref", where, f"{ref!r} points at nothing in the schema")
    return node
