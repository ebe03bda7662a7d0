"""The JSON kept in the conversations database, checked where it is read.

A message's ``meta`` and a conversation's ``settings`` are JSON text in SQLite
cells. Specula writes them, but the file is the user's: another program, a
bad disk or an older bug can leave 100,000 ``[`` or ``{"tokens": 5}`` there,
and every part that shows a conversation trusted the shape it expected (a
RecursionError or a TypeError at start, at every start). Here each cell is
parsed through :func:`specula.core.json_files.parse` (bounded depth and size)
and each key a part of Specula reads is checked for its kind, once, at the
storage boundary. A cell that fails is read as ``{}`` with a sentence saying
why: the message is shown as damaged (its text, without the statistics,
colours or versions the cell held) and the rest of the conversation works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specula.core import json_files

MAX_CELL_CHARS = 64 * 1024 * 1024
"""A message's meta holds its tokens and earlier versions (a long reply: megabytes);
far more than that is not something Specula wrote."""


def _token(t: object) -> bool:
    """A coloured token as stored: ``[text, source letter, draft probability or null]``
    (the probability may be NaN: Specula writes it so where a draft had none)."""
    return (isinstance(t, list) and len(t) == 3 and isinstance(t[0], str)
            and isinstance(t[1], str)
            and (t[2] is None or (isinstance(t[2], (int, float)) and not isinstance(t[2], bool))))


def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31


def _list_of(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _version(v: object) -> bool:
    """One earlier version of a reply: its content and the same fields as a message."""
    return (isinstance(v, dict) and isinstance(v.get("content", ""), str)
            and meta_problem({k: x for k, x in v.items() if k != "content"}) is None)


# key -> (what it must be, the check); keys not listed are kept as they are.
META_KEYS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "stats": ("an object of figures", lambda v: isinstance(v, dict)),
    "stop_reason": ("text", lambda v: isinstance(v, str)),
    "tokens": ("a list of [text, source, probability]", _list_of(_token)),
    "token_ids": ("a list of token ids", _list_of(_count)),
    "versions": ("a list of versions", _list_of(_version)),
    "version": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "attachments": ("a list", lambda v: isinstance(v, list)),
    "edited": ("true or false", lambda v: isinstance(v, bool)),
}

SETTINGS_KEYS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "overflow": ("text", lambda v: isinstance(v, str)),
    "preset": ("text", lambda v: v is None or isinstance(v, str)),
    "left_out": ("a count", lambda v: v is None or _count(v)),
    "start": ("a position", lambda v: v is None or _count(v)),
}


def _problem(value: dict[str, Any],
             keys: dict[str, tuple[str, Callable[[object], bool]]]) -> str | None:
    for key, (expected, ok) in keys.items():
        if key in value and not ok(value[key]):
            shown = repr(value[key])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            return f"\"{key}\" should be {expected}, found {shown}"
    return None


def meta_problem(meta: dict[str, Any]) -> str | None:
    """Why a message's meta cannot be used (the first bad key), or None."""
    return _problem(meta, META_KEYS)


def read_cell(text: object, keys: dict[str, tuple[str, Callable[[object], bool]]]
              ) -> tuple[dict[str, Any], str | None]:
    """The object in a JSON cell, checked against ``keys``; ``({}, why)`` when the cell
    is not a bounded JSON object of that shape. A NULL cell is an empty object."""
    if text is None:
        return {}, None
    if not isinstance(text, (str, bytes)):
        return {}, f"it holds {type(text).__name__}, not JSON text"
    try:
        value = json_files.parse(text, max_bytes=MAX_CELL_CHARS)
    except json_files.JsonError as exc:
        return {}, str(exc)
    if not isinstance(value, dict):
        return {}, f"it holds {json_files.kind_name(type(value))}, not an object"
    why = _problem(value, keys)
    return ({}, why) if why else (value, None)


def read_meta(text: object) -> tuple[dict[str, Any], str | None]:
    """A message's meta, or ``({}, why)`` when it is damaged."""
    return read_cell(text, META_KEYS)


def read_settings(text: object) -> tuple[dict[str, Any], str | None]:
    """A conversation's settings, or ``({}, why)`` when they are damaged."""
    return read_cell(text, SETTINGS_KEYS)
