"""Sizes of what a template operation would build, predicted from its inputs before it runs.

A list of 100 references to one 8 M-character string costs 800 bytes; joining,
printing or formatting it costs 800 M characters. So every operation that
flattens values into text asks these functions first. Each returns a lower
bound on the length of the text (exact for a string), stops counting once past
``limit`` (so the walk itself is bounded), walks containers iteratively (a
template can nest lists far deeper than Python's recursion limit) and charges
``charge`` one step per value it visits.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Collection, Iterator, Mapping
from itertools import chain
from typing import Any

from jinja2.utils import Namespace

Charge = Callable[[int], None]

_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_SEQUENCES = (list, tuple, set, frozenset, *_VIEWS)
_PERCENT_KEY = re.compile(r"%\(([^)]*)\)")
_FORMATTER = string.Formatter()


def _int_digits(n: int) -> int:
    return max(1, (n.bit_length() - 1) * 3 // 10)  # log10(2) > 0.3: never more than str(n)


def _scalar_size(v: object, quoted: bool) -> int:
    if isinstance(v, str):
        return len(v) + (2 if quoted else 0)
    if v is None or isinstance(v, bool):
        return 4
    if isinstance(v, int):
        return _int_digits(v)
    return 1  # floats, Undefined, functions, loop objects: short texts


def _children(v: object) -> tuple[int, Iterator[Any]] | None:
    """For a container: the least text ``str(v)`` adds besides its items (brackets,
    at least ", " between items, ": " after keys), and the values it spells out."""
    if isinstance(v, dict):
        return 2 + 4 * len(v), chain.from_iterable(v.items())
    if isinstance(v, _SEQUENCES):
        seq: Collection[Any] = v  # type: ignore[assignment]  # _SEQUENCES are collections
        return 2 + 2 * len(seq), iter(seq)
    if isinstance(v, Namespace):
        attrs = v._Namespace__attrs
        return 13 + 4 * len(attrs), chain.from_iterable(attrs.items())  # "<Namespace {...}>"
    return None


def text_size(value: object, limit: int, charge: Charge) -> int:
    """A lower bound on ``len(str(value))``, counted no further than ``limit + 1``."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        v = next(stack[-1], stack)
        if v is stack:  # this container is done
            stack.pop()
            continue
        charge(1)
        container = _children(v)
        if container is None:
            total += _scalar_size(v, quoted=len(stack) > 1)
        else:
            total += container[0]
            stack.append(container[1])
        if total > limit:
            break
    return total


def texts_size(items: list[Any], limit: int, charge: Charge) -> int:
    """A lower bound on ``sum(len(str(x)) for x in items)``: in C when every item is a
    string (a join of 8 M one-character strings), else item by item, charging each."""
    if set(map(type, items)) <= {str}:
        return sum(map(len, items))
    total = 0
    for x in items:
        charge(1)
        total += text_size(x, limit, charge)
        if total > limit:
            break
    return total


def json_size(value: object, indent: int | str | None, limit: int, charge: Charge) -> int:
    """A lower bound on ``len(json.dumps(value, indent=indent))``, counted no further than
    ``limit + 1``: with an indent, each item (each key of an object) starts a line
    indented by its depth."""
    step = len(indent) if isinstance(indent, str) else (indent or 0)
    pad = isinstance(indent, str) or indent is not None
    total = 0
    # (items, whether they are an object's (key, value) pairs)
    stack: list[tuple[Iterator[Any], bool]] = [(iter((value,)), False)]
    while stack:
        items, pairs = stack[-1]
        v = next(items, stack)
        if v is stack:
            stack.pop()
            continue
        charge(1)
        depth = len(stack) - 1
        if pad and depth:
            total += 1 + step * depth  # the newline and indentation before this item
        if pairs:
            key, v = v
            total += len(str(key)) + 4  # '"key": '
        if isinstance(v, Mapping):
            total += 2 + max(len(v) - 1, 0)  # braces, commas
            stack.append((iter(v.items()), True))
        elif isinstance(v, (list, tuple)):
            total += 2 + max(len(v) - 1, 0)
            stack.append((iter(v), False))
        else:
            total += _scalar_size(v, quoted=True)
        if total > limit:
            break
    return total


def percent_size(fmt: str, right: object, limit: int, charge: Charge) -> int:
    """A lower bound on ``len(fmt % right)``: every argument is spelled out at least once
    (``%s``), a mapping's value once per ``%(key)`` that names it."""
    if isinstance(right, Mapping):
        charge(len(fmt) // 64 + 1)
        total = 0
        for m in _PERCENT_KEY.finditer(fmt):
            charge(1)
            total += text_size(right.get(m.group(1), ""), limit, charge)
            if total > limit:
                break
        return total
    args = right if isinstance(right, tuple) else (right,)
    return sum(text_size(a, limit, charge) for a in args)


def format_size(fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], limit: int,
                charge: Charge, resolve: Callable[[str, tuple[Any, ...], Mapping[str, Any]], Any]
                ) -> int:
    """A lower bound on ``len(fmt.format(*args, **kwargs))``: the literal text, and each
    replacement field's value spelled out (``{}``, ``{0}``, ``{name}``, and through
    ``resolve``, the sandbox's own lookup, ``{0[1]}`` or ``{0.x}``)."""
    total = 0
    auto = 0
    try:
        fields = list(_FORMATTER.parse(fmt))
    except ValueError:  # str.format will say what is wrong with it
        return 0
    charge(len(fields) + 1)
    for literal, name, _spec, _conv in fields:
        total += len(literal)
        if name is None:
            continue
        if name == "" or name[0] in ".[":  # automatic numbering
            name = f"{auto}{name}"
            auto += 1
        try:
            arg = resolve(name, args, kwargs)
        except Exception:  # str.format raises the same error, with its own message
            arg = ""
        total += text_size(arg, limit, charge)
        if total > limit:
            break
    return total
