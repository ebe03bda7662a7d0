"""JSON Schema -> GBNF, for a supported subset, correct by construction.

Every keyword a schema holds is either enforced by the grammar or refused with a
:class:`SchemaError` naming it (a 400 on the server); none is dropped. The grammar
may admit fewer documents than the schema (properties come in the order they are
declared, no property beyond those named is written, a number is written in one
form), never more: every reply the grammar admits validates against the schema.

Supported: ``type`` (a name or a list), ``enum``, ``const``, ``properties``,
``required`` (a name missing from ``properties`` is written with the
``additionalProperties`` schema), ``additionalProperties``, ``items``,
``prefixItems``, ``minItems``, ``maxItems``, ``minLength``, ``maxLength``,
``pattern`` (json_schema_pattern.py; not together with a length), ``anyOf``,
``oneOf`` (when its branches admit disjoint JSON types), ``allOf`` of one schema,
local ``$ref`` (``#``, ``#/$defs/...``, any JSON pointer into the schema) with
``$defs`` / ``definitions``, and the annotations (``title``, ``description``,
``default``, ``examples``, ``$schema``, ``$comment``, ``deprecated``, ``readOnly``,
``writeOnly``; ``$id`` at the root).

Bounds are ``{m,n}`` repetitions (as llama.cpp's own converter writes them), so the
grammar's text and nesting do not grow with a bound; the bounds themselves, their
sum, the nesting and the text's size are capped (json_schema_limits.py).
"""

from __future__ import annotations

import json
from typing import Any

from specula.core.engine.grammar.json_schema_keywords import (
    ALWAYS_OK,
    ANNOTATIONS,
    ARRAY_KW,
    BASE_RULES,
    COMBINATORS,
    EMPTY,
    FIXED_EXPANSION,
    OBJECT_KW,
    STRING_KW,
    SUPPORTED,
    TYPES,
    json_type_of,
    natural,
    pointer,
)
from specula.core.engine.grammar.json_schema_limits import (
    MAX_ALTERNATIVES,
    MAX_ENUM,
    MAX_GRAMMAR_CHARS,
    MAX_NESTING,
    MAX_REPEAT,
    Budget,
    SchemaError,
)
from specula.core.engine.grammar.json_schema_pattern import PatternCompiler, gbnf_literal


class _Converter:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.rules: dict[str, str] = dict(BASE_RULES)
        self._names: dict[str, str] = {body: name for name, body in BASE_RULES.items()}
        self._refs: dict[str, str] = {}
        self._n = 0
        self._chars = 0
        self.budget = Budget()
        self.budget.used = FIXED_EXPANSION
        self.patterns = PatternCompiler(self.add, self.budget, "char")

    # -- rules -------------------------------------------------------------------------

    def add(self, hint: str, body: str) -> str:
        """A rule with ``body`` (one per distinct body), by name."""
        name = self._names.get(body)
        if name is None:
            self._chars += len(body) + len(hint) + 12
            if self._chars > MAX_GRAMMAR_CHARS:  # checked as it grows: work stays bounded
                raise SchemaError("schema", "#", f"its grammar would be larger than the limit "
                                  f"of {MAX_GRAMMAR_CHARS} characters")
            self._n += 1
            name = f"{hint}-{self._n}"
            self.rules[name] = body
            self._names[body] = name
        return name

    def text(self) -> str:
        text = "".join(f"{name} ::= {body}\n" for name, body in self.rules.items())
        if len(text) > MAX_GRAMMAR_CHARS:
            raise SchemaError("schema", "#", f"its grammar would be {len(text)} characters, "
                              f"above the limit of {MAX_GRAMMAR_CHARS}")
        return text

    # -- schemas -----------------------------------------------------------------------

    def visit(self, schema: Any, where: str, depth: int) -> str:
        """The name of a rule for the JSON texts that validate against ``schema``."""
        if depth > MAX_NESTING:
            raise SchemaError("schema", where, f"the schema nests deeper than {MAX_NESTING} levels")
        if schema is True:
            return "value"
        if schema is False:
            raise SchemaError("false", where, "the schema 'false' admits no value here")
        if not isinstance(schema, dict):
            raise SchemaError("schema", where, f"a schema must be an object or a boolean, not "
                              f"{type(schema).__name__}")
        for key in schema:
            if key not in SUPPORTED and key not in ANNOTATIONS and not (key == "$id" and where == "#"):
                raise SchemaError(key, where, "this keyword is not supported by constrained "
                                  "decoding; remove it or enforce it after generation")
        structural = [k for k in schema if k not in ALWAYS_OK]
        if "$ref" in schema:
            return self._ref(schema, structural, where, depth)
        for key in COMBINATORS:
            if key in schema:
                return self._combinator(schema, key, structural, where, depth)
        if "enum" in schema or "const" in schema:
            return self._literals(schema, structural, where)
        return self._typed(schema, where, depth)

    def _alone(self, key: str, structural: list[str], where: str, allowed: tuple[str, ...] = ()) -> None:
        others = [k for k in structural if k != key and k not in allowed]
        if others:
            raise SchemaError(key, where, f"'{key}' together with '{others[0]}' is not "
                              "supported; move it inside")

    def _ref(self, schema: dict[str, Any], structural: list[str], where: str, depth: int) -> str:
        self._alone("$ref", structural, where)
        ref = schema["$ref"]
        if not isinstance(ref, str):
            raise SchemaError("$ref", where, "must be a string")
        name = self._refs.get(ref)
        if name is None:
            target = pointer(self.root, ref, where)
            self._n += 1
            name = self._refs[ref] = f"ref-{self._n}"
            self.rules[name] = "value"  # a placeholder while the target is converted
            self.rules[name] = self.visit(target, ref, depth + 1)
        return name

    def _combinator(self, schema: dict[str, Any], key: str, structural: list[str], where: str,
                    depth: int) -> str:
        self._alone(key, structural, where)
        subs = schema[key]
        if not isinstance(subs, list) or not subs:
            raise SchemaError(key, where, "must be a non-empty list of schemas")
        if key == "allOf":
            if len(subs) != 1:
                raise SchemaError("allOf", where, "more than one schema: their intersection "
                                  "is not supported; merge them into one")
            return self.visit(subs[0], f"{where}/allOf/0", depth + 1)
        if len(subs) > MAX_ALTERNATIVES:
            raise SchemaError(key, where, f"{len(subs)} schemas; at most {MAX_ALTERNATIVES} are "
                              "supported")
        if key == "oneOf":  # exactly one: enforced when no two branches share a JSON type
            seen: set[str] = set()
            for sub in subs:
                kinds = self._types(sub, depth)
                if "integer" in kinds:
                    kinds = kinds | {"number"}
                if kinds & seen:
                    raise SchemaError("oneOf", where, "its schemas may admit the same value "
                                      "(only branches of different JSON types are supported); "
                                      "use anyOf")
                seen |= kinds
        names = [self.visit(s, f"{where}/{key}/{i}", depth + 1) for i, s in enumerate(subs)]
        return self.add("alt", " | ".join(dict.fromkeys(names)))

    def _types(self, schema: Any, depth: int) -> set[str]:
        """The JSON types ``schema`` may admit (all of them when unsure)."""
        if depth > MAX_NESTING:
            return set(TYPES)
        if not isinstance(schema, dict):
            return set(TYPES) if schema is not False else set()
        if isinstance(schema.get("$ref"), str):
            try:
                return self._types(pointer(self.root, schema["$ref"], ""), depth + 1)
            except SchemaError:
                return set(TYPES)
        if "const" in schema:
            return json_type_of(schema["const"])
        if isinstance(schema.get("enum"), list):
            return set().union(*(json_type_of(v) for v in schema["enum"]))
        t = schema.get("type")
        if isinstance(t, str):
            return {t}
        if isinstance(t, list):
            return {x for x in t if isinstance(x, str)}
        return set(TYPES)

    def _literals(self, schema: dict[str, Any], structural: list[str], where: str) -> str:
        key = "const" if "const" in schema else "enum"
        self._alone(key, structural, where, ("type",))
        if key == "const":
            values = [schema["const"]]
        else:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise SchemaError("enum", where, "must be a non-empty list")
            if len(values) > MAX_ENUM:
                raise SchemaError("enum", where, f"{len(values)} values; at most {MAX_ENUM} "
                                  "are supported")
        types = self._type_list(schema, where) if "type" in schema else None
        kept = [v for v in values if types is None or json_type_of(v) & set(types)]
        if not kept:
            raise SchemaError(key, where, "no value has the schema's 'type'")
        alts: list[str] = []
        size = 0
        for v in kept:
            try:
                text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            except ValueError:
                raise SchemaError(key, where, "holds a number JSON cannot write") from None
            alts.append(gbnf_literal(text))
            size += len(alts[-1])
            if size > MAX_GRAMMAR_CHARS:
                raise SchemaError(key, where, f"its values are longer than the grammar's limit "
                                  f"of {MAX_GRAMMAR_CHARS} characters")
        return self.add("literal", "(" + " | ".join(dict.fromkeys(alts)) + ") space")

    def _type_list(self, schema: dict[str, Any], where: str) -> list[str]:
        t = schema["type"]
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not names or not all(isinstance(x, str) for x in names):
            raise SchemaError("type", where, "must be a type name or a non-empty list of them")
        for x in names:
            if x not in TYPES:
                raise SchemaError("type", where, f"unknown type {x!r} (one of {', '.join(TYPES)})")
        return list(dict.fromkeys(names))

    def _typed(self, schema: dict[str, Any], where: str, depth: int) -> str:
        if "type" in schema:
            types = self._type_list(schema, where)
        else:  # no type: the family its keywords name (a subset of "any"), else any value
            families = [t for t, kws in (("string", STRING_KW), ("object", OBJECT_KW),
                                         ("array", ARRAY_KW)) if any(k in schema for k in kws)]
            if len(families) != 1:
                families = list(TYPES)
            types = families
        if "number" in types and "integer" in types:
            types.remove("integer")
        names = [self._one_type(t, schema, where, depth) for t in types]
        if len(names) == 1:
            return names[0]
        return self.add("alt", " | ".join(names))

    def _one_type(self, t: str, schema: dict[str, Any], where: str, depth: int) -> str:
        if t == "string":
            return self._string(schema, where)
        if t == "object":
            return self._object(schema, where, depth)
        if t == "array":
            return self._array(schema, where, depth)
        return t  # number, integer, boolean, null: fixed rules

    def _string(self, schema: dict[str, Any], where: str) -> str:
        lo = natural(schema, "minLength", where)
        hi = natural(schema, "maxLength", where)
        pattern = schema.get("pattern")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise SchemaError("pattern", where, "must be a string")
            if lo is not None or hi is not None:
                raise SchemaError("pattern", where, "'pattern' together with "
                                  f"'{'minLength' if lo is not None else 'maxLength'}' is not "
                                  "supported; put the length into the pattern")
            return self.patterns.rule(pattern, where)
        if lo is None and hi is None:
            return "string"
        lo = lo or 0
        if hi is not None and hi < lo:
            raise SchemaError("maxLength", where, f"{hi} is below minLength {lo}: no string "
                              "meets both")
        self.budget.repeat("maxLength" if hi is not None and hi >= lo else "minLength",
                           where, lo, hi)
        rep = f"char{{{lo},{'' if hi is None else hi}}}"
        return self.add("string", f'"\\"" {rep} "\\"" space')

    def _object(self, schema: dict[str, Any], where: str, depth: int) -> str:
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError("properties", where, "must be an object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError("required", where, "must be a list of property names")
        extra = schema.get("additionalProperties", True)
        if not isinstance(extra, (bool, dict)):
            raise SchemaError("additionalProperties", where, "must be a schema")
        if "properties" not in schema and "required" not in schema and \
                ("additionalProperties" not in schema or extra is True):
            return "object"
        if len(props) + len(required) > MAX_GRAMMAR_CHARS // 32:  # each member is ~32 chars
            raise SchemaError("properties", where, f"{len(props) + len(required)} properties; "
                              f"at most {MAX_GRAMMAR_CHARS // 32} fit the grammar's size limit")
        items: list[tuple[str, bool, str]] = []  # (key rule, required, value rule)
        need = set(required)
        for name, sub in props.items():
            if sub is False:
                if name in need:
                    raise SchemaError("required", where, f"names '{name}', whose schema is false")
                continue
            value = self.visit(sub, f"{where}/properties/{name}", depth + 1)
            items.append((name, name in need, value))
        for name in dict.fromkeys(required):
            if name in props:
                continue
            if extra is False:
                raise SchemaError("required", where, f"names '{name}', which is not in "
                                  "'properties' while additionalProperties is false")
            value = self.visit(extra, f"{where}/additionalProperties", depth + 1)
            items.append((name, True, value))
        # F(i): the members from i on, none written yet; T(i): the same after a first one.
        # One rule each (rule references nest nothing in llama.cpp's parser).
        first_rest, then_rest = "", ""
        for name, req, value in reversed(items):
            member = f"{gbnf_literal(json.dumps(name, ensure_ascii=False))} space \":\" space {value}"
            then = f'"," space {member}' + (f" {then_rest}" if then_rest else "")
            then_name = self.add("members", then if req else f"{then} | {then_rest or EMPTY}")
            first = member + (f" {then_rest}" if then_rest else "")
            if not req:
                first = f"{first} | {first_rest or EMPTY}"
            first_rest, then_rest = self.add("members", first), then_name
        body = first_rest or '""'
        return self.add("object", f'"{{" space {body} "}}" space')

    def _array(self, schema: dict[str, Any], where: str, depth: int) -> str:
        prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise SchemaError("prefixItems", where, "must be a list of schemas")
        items = schema.get("items", True)
        if isinstance(items, list):
            raise SchemaError("items", where, "a list of schemas is draft-07's tuple form; use "
                              "'prefixItems'")
        lo = natural(schema, "minItems", where) or 0
        hi = natural(schema, "maxItems", where)
        if hi is not None and hi < lo:
            raise SchemaError("maxItems", where, f"{hi} is below minItems {lo}: no array meets both")
        for key, bound in (("minItems", lo), ("maxItems", hi)):
            if bound is not None and bound > MAX_REPEAT:
                raise SchemaError(key, where, f"the bound {bound} is above {MAX_REPEAT}, the "
                                  "largest a grammar can enforce")
        n_pre = len(prefix) if hi is None else min(len(prefix), hi)
        if items is False:
            if lo > n_pre:
                raise SchemaError("minItems", where, f"{lo} items, but items is false after "
                                  f"{n_pre} prefixItems")
            rest_hi: int | None = 0
        else:
            rest_hi = None if hi is None else hi - n_pre
        rest_lo = max(0, lo - n_pre)
        pre = [self.visit(s, f"{where}/prefixItems/{i}", depth + 1) for i, s in enumerate(prefix[:n_pre])]
        item = self.visit(items, f"{where}/items", depth + 1) if rest_hi != 0 else ""
        if n_pre == 0:
            if not item:
                return self.add("array", '"[" space "]" space')
            self.budget.repeat("maxItems" if hi is not None else "minItems", where,
                               max(rest_lo - 1, 0), None if rest_hi is None else rest_hi - 1, 3)
            sep = self.add("next", f'"," space {item}')
            tail = f" {sep}{{{max(rest_lo - 1, 0)},{'' if rest_hi is None else rest_hi - 1}}}"
            elems = self.add("elements", item + ("" if rest_hi == 1 else tail))
            if rest_lo == 0:
                elems = self.add("elements", f'{elems} | ""')
            return self.add("array", f'"[" space {elems} "]" space')
        rest = '""'
        if item:
            self.budget.repeat("maxItems" if hi is not None else "minItems", where,
                               rest_lo, rest_hi, 3)
            sep = self.add("next", f'"," space {item}')
            rest = self.add("rest", f"{sep}{{{rest_lo},{'' if rest_hi is None else rest_hi}}}")
        after = rest
        for i in range(n_pre - 1, -1, -1):
            lead = "" if i == 0 else '"," space '
            seq = f"{lead}{pre[i]} {after}"
            after = self.add("prefix", seq if i < lo else f'{seq} | ""')
        return self.add("array", f'"[" space {after} "]" space')


def schema_to_gbnf(schema: Any) -> str:
    """GBNF (root rule ``root``) for replies that validate against ``schema``, or
    SchemaError naming the keyword that cannot be enforced or is past a limit."""
    conv = _Converter(schema)
    root = conv.visit(schema, "#", 0)
    conv.rules = {"root": root, **conv.rules}
    return conv.text()
