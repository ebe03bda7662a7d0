"""Jinja's filters and globals, metered: each charges the render's budget for the work it
will do and has its result's size predicted from its inputs, both before it runs.

A filter is one Python call that can walk a whole list (``sort``, ``join``,
``map``) or build a large string (``indent``, ``replace``, ``tojson``), so a
budget ticked only per loop iteration and call never sees it, and a size
checked after the call comes after the allocation. Here every filter is wrapped:

* the value's size is charged first (an item per list element, a step per 64
  characters: what the filter must read); a value that is an iterator (the
  lazy output of ``map``, ``select``...) instead charges a step per item as the
  filter pulls it, so a chain of 40 ``map`` filters costs 40 steps an item;
* a rule per growing filter predicts its result from its arguments and refuses
  past the value cap (``join`` sums its items' lengths, ``indent`` counts the
  lines it pads, ``tojson`` walks the value with its indentation...);
* results are checked after the call too (filters that only shrink or keep a
  size, and case maps, which grow a string at most threefold).

The wrapper keeps Jinja's pass-argument marker (``jinja_pass_arg``): filters
such as ``truncate`` and ``wordwrap`` receive the environment first.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sized
from typing import Any, Protocol

from jinja2.filters import make_attrgetter
from jinja2.utils import _PassArg

from specula.core.chat.template_limits import MAX_VALUE_CHARS, TemplateLimitError, check_predicted
from specula.core.chat.template_sizes import json_size, percent_size, text_size, texts_size

_SIZED = (list, tuple, dict, set, frozenset)
BIG_WIDTH = re.compile(r"\d{8,}")  # a width or precision of 10^7 characters or more
# Filters that do not read their value through (a sized container's length, its first
# item): no charge beyond the call itself.
_CONSTANT = frozenset({"length", "count", "first", "last", "d", "default", "attr", "safe",
                       "abs", "round", "random", "items", "filesizeformat"})
# Filters whose result is at most this many times their string value (case maps: 'ß' ->
# 'SS', 'ΐ' -> three characters; escaping: '"' -> '&#34;'; percent-encoding: a 4-byte
# character -> 12 characters; urlize wraps each word in an anchor).
_GROWTH = {"upper": 3, "lower": 3, "title": 3, "capitalize": 3, "e": 5, "escape": 5,
           "forceescape": 5, "urlencode": 12, "urlize": 16}
# Filters that walk a string in Python (regex callbacks, textwrap's word loop): steps per
# character instead of per 64 (measured: striptags on '<b>' * 2.6 M took 2.9 s of CPU time
# and wordwrap on 7.7 M characters 4.5 s, while 10 M empty loop iterations take about 1 s;
# a shared, busy machine).
_STEPS_PER_CHAR = {"striptags": 4, "wordcount": 1, "urlize": 1, "wordwrap": 6}
# Filters that turn a value that is not a string into one first (``str(value)``).
_STRINGIFY = frozenset({"upper", "lower", "title", "capitalize", "trim", "striptags", "e",
                        "escape", "forceescape", "urlize", "wordcount", "wordwrap", "truncate",
                        "center", "indent", "replace", "format"})
# Filters that sort: n log n comparisons.
_SORTING = frozenset({"sort", "dictsort", "groupby", "unique", "min", "max"})


class Meter(Protocol):
    """What metering needs from the environment: the running render's budget."""

    def charge(self, steps: int) -> None: ...

    def metered_iter(self, iterable: Any) -> Iterator[Any]: ...


def read_cost(value: object) -> int:
    """Steps to read ``value`` through once."""
    if isinstance(value, str):
        return len(value) // 64 + 1
    if isinstance(value, Sized):  # lists, dicts, ranges, dict views...
        return len(value) + 1
    return 1


def _text(meter: Meter, value: object) -> int:
    return text_size(value, MAX_VALUE_CHARS, meter.charge)


def _listed(meter: Meter, value: Any) -> list[Any]:
    return value if isinstance(value, list) else list(meter.metered_iter(value))


def _by_attribute(meter: Meter, args: list[Any], kwargs: dict[str, Any], at: int) -> list[Any]:
    """The value (``args[0]``) listed, each item replaced by its ``attribute`` when the
    filter was given one (then taken out of the arguments: the filter gets the items)."""
    items = _listed(meter, args[0])
    attribute = kwargs.pop("attribute", None)
    if len(args) > at:
        attribute = args.pop(at)
    if attribute is not None:
        get = make_attrgetter(meter, attribute)  # the meter is the Jinja environment
        items = [get(x) for x in meter.metered_iter(items)]
    args[0] = items
    return items


def _join(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``join``: the items' text plus a separator between each two."""
    if not args:
        return
    items = _by_attribute(meter, args, kwargs, 2)
    sep = args[1] if len(args) > 1 else kwargs.get("d", "")
    total = len(str(sep)) * max(len(items) - 1, 0)
    total += texts_size(items, MAX_VALUE_CHARS, meter.charge)
    check_predicted("the join filter's result", total)


def _replace(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``replace``: each occurrence of ``old`` (all, or ``count`` of them) grows by
    ``len(new) - len(old)``; an empty ``old`` occurs between every two characters."""
    if len(args) < 3:
        return
    s, old, new = str(args[0]), str(args[1]), str(args[2])
    count = args[3] if len(args) > 3 else kwargs.get("count")
    hits = s.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    check_predicted("the replace filter's result", len(s) + hits * (len(new) - len(old)))


def _indent(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``indent``: every line but (by default) the first gets the indentation."""
    if not args:
        return
    width = args[1] if len(args) > 1 else kwargs.get("width", 4)
    pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    s = str(args[0])
    check_predicted("the indent filter's result", len(s) + pad * (s.count("\n") + 1))


def _center(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    width = args[1] if len(args) > 1 else kwargs.get("width", 80)
    if isinstance(width, int):
        check_predicted("the center filter's result", width)


def _truncate(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    length = args[1] if len(args) > 1 else kwargs.get("length", 255)
    if isinstance(length, int):
        check_predicted("the truncate filter's result", length)


def _wordwrap(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``wordwrap``: a line holds at least half of ``width`` (or one word) and lines are joined by
    ``wrapstring``."""
    if not args:
        return
    s = str(args[0])
    width = args[1] if len(args) > 1 else kwargs.get("width", 79)
    wrap = args[3] if len(args) > 3 else kwargs.get("wrapstring")
    lines = 2 * len(s) // max(width, 1) + s.count("\n") + 1 if isinstance(width, int) else 1
    check_predicted("the wordwrap filter's result",
                    len(s) + lines * (len(wrap) if isinstance(wrap, str) else 1))


def _format(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``format``: ``value % args`` (or ``% kwargs``), widths included."""
    if not args:
        return
    right: object = kwargs if kwargs else tuple(args[1:])
    check_percent(meter, str(args[0]), right)


def _tojson(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    if not args:
        return
    indent = args[2] if len(args) > 2 else kwargs.get("indent")
    if not isinstance(indent, (int, str)) or isinstance(indent, bool):
        indent = None
    if isinstance(indent, int):  # json builds ' ' * indent before it writes anything
        check_predicted("the tojson filter's indentation", indent)
    check_predicted("the tojson filter's result",
                    json_size(args[0], indent, MAX_VALUE_CHARS, meter.charge))


def _texts(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Filters that spell their value out (``string``, ``pprint``, ``xmlattr``); pprint
    lays it out in Python, 90-340 ns a character (measured): four steps a character."""
    if args:
        size = _text(meter, args[0])
        check_predicted(f"the {name} filter's result", size)
        if name == "pprint":
            meter.charge(4 * size)


def _sum(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``sum`` of lists (``start=[]``) concatenates them."""
    if not args:
        return
    if len(args) > 1:  # sum(attribute, start): start as a keyword, attribute taken out
        kwargs.setdefault("start", args.pop(2) if len(args) > 2 else 0)
    items = _by_attribute(meter, args, kwargs, 1)
    start = kwargs.get("start", 0)
    total = (len(start) if isinstance(start, _SIZED) else 0) + sum(
        len(x) for x in meter.metered_iter(items) if isinstance(x, _SIZED))
    check_predicted("the sum filter's result", total)


def _batch(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``batch(n, fill)`` pads the last row to ``n`` items; ``slice(n)`` makes ``n`` rows."""
    n = args[1] if len(args) > 1 else kwargs.get("linecount", kwargs.get("slices", 0))
    if isinstance(n, int):
        check_predicted(f"the {name} filter's rows", n)
        meter.charge(n)


def _sorting(meter: Meter, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """n log n comparisons, and the text of every string item once (the key of a
    case-insensitive comparison, Jinja's default, is a lowered copy of it)."""
    if args:
        args[0] = items = _listed(meter, args[0]) if name != "dictsort" else args[0]
        meter.charge(len(items) * max(len(items).bit_length(), 1))
        strings = items if isinstance(items, list) else list(items)  # a dict's keys
        meter.charge(texts_size(strings, 1 << 62, meter.charge) // 64)


def check_percent(meter: Meter, fmt: str, right: object) -> None:
    """``fmt % right``: no huge width (``%300000000s``, ``%*d`` with a huge argument),
    and the arguments spelled out must fit the value cap."""
    star_args = right if isinstance(right, tuple) else (right,)
    if BIG_WIDTH.search(fmt) or ("*" in fmt and any(
            isinstance(v, int) and v > MAX_VALUE_CHARS for v in star_args)):
        raise TemplateLimitError("chat template: a % format asks for a huge width")
    check_predicted("a % format's result",
                    percent_size(fmt, right, MAX_VALUE_CHARS, meter.charge) + len(fmt))


Rule = Callable[[Meter, str, list[Any], dict[str, Any]], None]
_RULES: dict[str, Rule] = {
    "join": _join, "replace": _replace, "indent": _indent, "center": _center,
    "truncate": _truncate, "wordwrap": _wordwrap, "format": _format, "tojson": _tojson,
    "string": _texts, "pprint": _texts, "xmlattr": _texts, "sum": _sum, "batch": _batch,
    "slice": _batch, **{name: _sorting for name in _SORTING},
}


def metered_filter(meter: Meter, name: str, func: Callable[..., Any],
                   check_result: Callable[[object, str], object]) -> Callable[..., Any]:
    """``func`` (the filter ``name``) charging ``meter`` and refusing oversized results
    before it runs; Jinja's pass-argument marker is kept (``functools.wraps``)."""
    skip = 0 if _PassArg.from_obj(func) is None else 1
    rule = _RULES.get(name)
    growth = _GROWTH.get(name, 1)
    per_char = _STEPS_PER_CHAR.get(name, 0)
    constant = name in _CONSTANT

    @functools.wraps(func)
    def metered(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= skip:
            return func(*args, **kwargs)
        head, rest = args[:skip], list(args[skip:])
        value = rest[0]
        if isinstance(value, Iterator):
            rest[0] = meter.metered_iter(value)  # a step per item as the filter pulls it
        elif per_char and isinstance(value, str):
            meter.charge(len(value) * per_char)
        elif not constant:
            meter.charge(read_cost(value))
        if isinstance(value, str):
            if growth > 1:
                check_predicted(f"the {name} filter's result", len(value) * growth)
        elif name in _STRINGIFY:  # str(value) comes first: a list of large strings is large
            check_predicted(f"the {name} filter's text", _text(meter, value) * growth)
        if rule is not None:
            rule(meter, name, rest, kwargs)
        return check_result(func(*head, *rest, **kwargs), f"the {name} filter")

    return metered


def metered_test(meter: Meter, func: Callable[..., Any]) -> Callable[..., Any]:
    """A test (``is lower``, ``is in``...) charging what it reads: its value and its
    arguments (``select('lower')`` over many long strings reads them all)."""
    skip = 0 if _PassArg.from_obj(func) is None else 1

    @functools.wraps(func)
    def metered(*args: Any, **kwargs: Any) -> Any:
        meter.charge(sum(read_cost(a) for a in args[skip:]))
        return func(*args, **kwargs)

    return metered


def lipsum_cost(n: object, minimum: object, maximum: object) -> tuple[int, int]:
    """``lipsum(n, html, min, max)``: steps (four per word: random choices in Python)
    and the least characters (a word and a space are at least three)."""
    n_i = n if isinstance(n, int) else 5
    lo = minimum if isinstance(minimum, int) else 20
    hi = maximum if isinstance(maximum, int) else 100
    return 4 * max(n_i, 0) * max(hi, 0), 3 * max(n_i, 0) * max(lo, 0)
