"""Bounds on what one request may cost the server before it is understood.

A body is checked in this order, each step cheap and linear: the
``Content-Length`` header (ASCII digits only: ``str.isdigit`` also accepts
``"²"``), the size cap, the nesting depth (scanned *before* ``json.loads``,
whose C parser recurses once per ``[`` or ``{``), then the parse itself.
Strings are checked for lone surrogates (``"\\ud800"`` is valid JSON but not
text any tokenizer can take).
"""

from __future__ import annotations

import json
import re
from typing import Any

from specula.server.errors import OpenAIError

MAX_BODY = 16 * 1024 * 1024
MAX_DEPTH = 64  # OpenAI bodies nest a handful of levels (body > messages > message > parts)
_MAX_LENGTH_DIGITS = 12

_STRUCTURE = re.compile(rb'[\[\]{}"]')
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+"', re.DOTALL)  # after an opening quote


def content_length(value: str | None) -> int:
    """The body size a request announces, or a 411/400/413 error."""
    if value is None:
        raise OpenAIError(411, "A Content-Length header is required.", code="length_required")
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > _MAX_LENGTH_DIGITS:
        raise OpenAIError(400, f"Content-Length must be a number of bytes, not {value[:20]!r}.",
                          code="invalid_content_length")
    length = int(value)
    if length > MAX_BODY:
        raise OpenAIError(413, f"The request body is {length} bytes; the limit is {MAX_BODY}.",
                          code="request_too_large")
    return length


def nesting_depth(raw: bytes, limit: int = MAX_DEPTH) -> int:
    """The deepest ``[``/``{`` nesting outside strings, counting no further than ``limit + 1``.

    One regex step per bracket or string (strings are skipped whole, possessively,
    so no input backtracks); an unterminated string ends the scan, since
    ``json.loads`` rejects such a body anyway without recursing past what precedes it.
    """
    depth = deepest = 0
    pos = 0
    while True:
        m = _STRUCTURE.search(raw, pos)
        if m is None:
            return deepest
        c = raw[m.start()]
        pos = m.end()
        if c == 0x22:  # '"'
            s = _STRING_REST.match(raw, pos)
            if s is None:
                return deepest
            pos = s.end()
        elif c in (0x5B, 0x7B):  # '[' '{'
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_text(value: Any, where: str) -> None:
    """Lone surrogates anywhere in the body (iterative: the depth is already bounded)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        v, path = stack.pop()
        if isinstance(v, str):
            if _has_lone_surrogate(v):
                raise OpenAIError(400, f"'{path or 'body'}' contains a lone surrogate "
                                  "(\\ud800-\\udfff without its pair): not valid Unicode text.",
                                  param=path or None, code="invalid_value")
        elif isinstance(v, dict):
            for k, item in v.items():
                if _has_lone_surrogate(k):
                    raise OpenAIError(400, "A field name contains a lone surrogate.",
                                      param=path or None, code="invalid_value")
                stack.append((item, f"{path}.{k}" if path else k))
        elif isinstance(v, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(v))


def parse_json(raw: bytes) -> dict[str, Any]:
    """A request body -> a JSON object, or a 400 that says what is wrong with it."""
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_depth(raw) > MAX_DEPTH:
        raise OpenAIError(400, f"The request body nests deeper than {MAX_DEPTH} levels.",
                          code="invalid_json")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # ValueError: bad UTF-8, bad JSON, 5000-digit ints
        raise OpenAIError(400, f"The request body is not valid JSON: {exc}",
                          code="invalid_json") from exc
    if not isinstance(body, dict):
        raise OpenAIError(400, "The request body must be a JSON object.", code="invalid_json")
    _check_text(body, "")
    return body
