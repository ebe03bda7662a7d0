"""A JSON Schema ``pattern`` as GBNF over the characters of a JSON string.

The regular expression is read in a small, common subset (literals, ``.``, classes,
``\\d \\w \\s`` and their negations, groups, alternation, ``* + ? {m} {m,} {m,n}``,
a leading ``^`` and a trailing ``$``); anything else is refused by name. Each
character is matched in the one form a JSON encoder writes it (``"`` as ``\\"``,
a newline as ``\\n``, other control characters as ``\\u00XX``), so the reply is
JSON and its decoded text is what the pattern sees.

Every construct is generated as a *subset* of what both Python's ``re`` (what the
``jsonschema`` validator uses) and ECMA-262 accept (``\\d`` is ``[0-9]``, ``.``
leaves out the line terminators), so a reply that meets the grammar meets the
pattern under either reading. A pattern without ``^`` / ``$`` matches anywhere in
the string (``re.search``): any characters may come before / after it.

Repetitions stay ``{m,n}`` in the GBNF; llama.cpp expands them into one rule per
count, so every bound is checked against ``limits.max_repeat`` and their sum against
the grammar's expansion budget before any text reaches llama.cpp.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from specula.core.engine.grammar.json_schema_limits import Budget, SchemaError

# What a negated class leaves out besides the client's own characters: what a JSON
# string does not hold raw (quote, backslash, control characters, DEL, surrogates, past
# U+0FFFFF), widened to whole lead bytes (U+D000-U+DFFF: ED; U+100000 on: F4) so that a
# lone lead byte is refused exactly when every token starting with it is (llama.cpp
# judges an unfinished sequence by the span it could become; the prefilter relies on it).
_NOT_RAW = '"\\\\\\x7F\\x00-\\x1F\\uD000-\\uDFFF\\U00100000-\\U003FFFFF'
_LINE_ENDS = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_DIGIT = [(0x30, 0x39)]
_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SPACE = [(0x09, 0x0D), (0x20, 0x20)]
# The negated shorthands as printable ASCII only: Python's \D, \W, \S leave out Unicode
# digits, letters and spaces (and \x1c-\x1f), ECMA-262's do not; both match these.
_SHORTHANDS = {"d": _DIGIT, "w": _WORD, "s": _SPACE,
               "D": [(0x20, 0x2F), (0x3A, 0x7E)],
               "W": [(0x20, 0x2F), (0x3A, 0x40), (0x5B, 0x5E), (0x60, 0x60), (0x7B, 0x7E)],
               "S": [(0x21, 0x7E)]}
_SPECIAL = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_MAX_PATTERN = 1000  # characters of one pattern
_MAX_GROUP_DEPTH = 32


def json_char(c: str) -> str:
    """How a JSON encoder writes ``c`` inside a string (one fixed form)."""
    if c in _SPECIAL:
        return _SPECIAL[c]
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return f"\\u{ord(c):04x}"
    return c


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _class_char(cp: int) -> str:
    """A code point inside a GBNF character class."""
    c = chr(cp)
    if c in "]\\-^\"[" or cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02X}" if cp < 0x100 else f"\\u{cp:04X}"
    if 0xD800 <= cp <= 0xDFFF:
        return f"\\u{cp:04X}"
    return c


def _is_raw(cp: int) -> bool:
    return not (cp < 0x20 or cp == 0x7F or cp in (0x22, 0x5C) or 0xD800 <= cp <= 0xDFFF
                or cp > 0xFFFFF)


# -- the regular expression, read ----------------------------------------------------------


@dataclass
class _Node:
    kind: str  # "chars" (ranges, negated), "seq", "alt", "rep"
    ranges: list[tuple[int, int]] = field(default_factory=list)
    negated: bool = False
    items: list[_Node] = field(default_factory=list)
    lo: int = 0
    hi: int | None = None


class _Reader:
    def __init__(self, text: str, where: str) -> None:
        self.s = text
        self.i = 0
        self.where = where
        self.negated_class = False  # inside [^...]: no shorthand (Unicode classes differ)

    def fail(self, what: str) -> SchemaError:
        return SchemaError("pattern", self.where, f"{what} (at character {self.i} of "
                           f"{self.s!r}) is not supported in a pattern")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alternation(self, depth: int) -> _Node:
        if depth > _MAX_GROUP_DEPTH:
            raise SchemaError("pattern", self.where, f"the pattern nests groups deeper than "
                              f"{_MAX_GROUP_DEPTH} levels")
        alts = [self.sequence(depth)]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence(depth))
        return alts[0] if len(alts) == 1 else _Node("alt", items=alts)

    def sequence(self, depth: int) -> _Node:
        items: list[_Node] = []
        while self.i < len(self.s) and self.peek() not in "|)":
            atom = self.atom(depth)
            q = self.quantifier()
            if q is not None:
                atom = _Node("rep", items=[atom], lo=q[0], hi=q[1])
                if self.peek() == "?":  # lazy: the same set of strings
                    self.i += 1
                if self.peek() in ("*", "+", "?") or self._brace_quantifier() is not None:
                    raise self.fail("a repeated repetition")
            items.append(atom)
        return _Node("seq", items=items)

    _BRACE = re.compile(r"\{(\d+)(,(\d*))?\}")

    def _brace_quantifier(self) -> re.Match[str] | None:
        return self._BRACE.match(self.s, self.i) if self.peek() == "{" else None

    def quantifier(self) -> tuple[int, int | None] | None:
        c = self.peek()
        if c and c in "*+?":
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        m = self._brace_quantifier()
        if m is None:
            return None
        self.i = m.end()
        lo = int(m.group(1))
        hi: int | None = lo
        if m.group(2):
            hi = int(m.group(3)) if m.group(3) else None
        if hi is not None and hi < lo:
            raise SchemaError("pattern", self.where, f"the repetition {m.group(0)} has its "
                              "maximum below its minimum")
        return lo, hi

    def atom(self, depth: int) -> _Node:
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise self.fail("a lookaround or named group")
            node = self.alternation(depth + 1)
            if self.peek() != ")":
                raise SchemaError("pattern", self.where, "the pattern has an unclosed '('")
            self.i += 1
            return node
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return _Node("chars", ranges=list(_LINE_ENDS), negated=True)
        if c in "^$":
            raise self.fail(f"'{c}' inside the pattern")
        if c in "*+?" or (c == "{" and self._brace_quantifier() is not None):
            raise self.fail("a repetition of nothing")
        if c in "{}":  # Python reads "{,5}" as a repetition, ECMA-262 as text: spell it out
            raise self.fail(f"a '{c}' that is not a repetition (escape it as '\\{c}')")
        if c == "\\":
            return self.escape(in_class=False)
        self.i += 1
        return _Node("chars", ranges=[(ord(c), ord(c))])

    def escape(self, in_class: bool) -> _Node:
        self.i += 1
        c = self.peek()
        if not c:
            raise SchemaError("pattern", self.where, "the pattern ends with a lone backslash")
        self.i += 1
        if c in _SHORTHANDS:
            if in_class and (c.isupper() or self.negated_class):
                raise self.fail(f"'\\{c}' inside {'a negated class' if self.negated_class else 'a class'}")
            return _Node("chars", ranges=list(_SHORTHANDS[c]))
        if c in _ESCAPES:
            if c == "0" and self.peek().isdigit():
                raise self.fail("an octal escape")
            cp = ord(_ESCAPES[c])
        elif c in "xu":
            n = 2 if c == "x" else 4
            digits = self.s[self.i : self.i + n]
            if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.fail(f"'\\{c}' without {n} hex digits")
            self.i += n
            cp = int(digits, 16)
        elif not c.isalnum():
            cp = ord(c)
        else:
            raise self.fail(f"the escape '\\{c}'")
        return _Node("chars", ranges=[(cp, cp)])

    def char_class(self) -> _Node:
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        self.negated_class = negated
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.peek()
            if not c:
                raise SchemaError("pattern", self.where, "the pattern has an unclosed '['")
            if c == "]" and not first:
                self.i += 1
                break
            if c == "[":
                raise self.fail("'[' inside a class")
            first = False
            if c == "\\":
                node = self.escape(in_class=True)
                if len(node.ranges) != 1 or node.ranges[0][0] != node.ranges[0][1]:
                    ranges.extend(node.ranges)
                    continue
                lo = node.ranges[0][0]
            else:
                self.i += 1
                lo = ord(c)
            if self.peek() == "-" and self.s[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                if self.peek() == "\\":
                    node = self.escape(in_class=True)
                    if len(node.ranges) != 1 or node.ranges[0][0] != node.ranges[0][1]:
                        raise self.fail("a range ending in a class shorthand")
                    hi = node.ranges[0][0]
                else:
                    hi = ord(self.peek())
                    self.i += 1
                if hi < lo:
                    raise SchemaError("pattern", self.where, "a class range runs backwards")
                ranges.append((lo, hi))
            else:
                ranges.append((lo, lo))
        self.negated_class = False
        return _Node("chars", ranges=ranges, negated=negated)


# -- to GBNF -------------------------------------------------------------------------------


class PatternCompiler:
    """Turns patterns into GBNF rules through ``add_rule`` (the schema converter's)."""

    def __init__(self, add_rule: Callable[[str, str], str], budget: Budget,
                 char_rule: str) -> None:
        self._add = add_rule  # (hint, body) -> rule name
        self._budget = budget
        self._char = char_rule

    def rule(self, pattern: str, where: str) -> str:
        """The name of a rule for a JSON string (quotes included) that matches ``pattern``."""
        if len(pattern) > _MAX_PATTERN:
            raise SchemaError("pattern", where, f"the pattern is longer than {_MAX_PATTERN} "
                              "characters")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SchemaError("pattern", where, f"the pattern is not a regular expression "
                              f"Python reads: {exc}") from None
        body = pattern
        start = body.startswith("^")
        if start:
            body = body[1:]
        end = body.endswith("$") and not body.endswith("\\$")
        if end:
            body = body[:-1]
        reader = _Reader(body, where)
        node = reader.alternation(0)
        if reader.i != len(body):
            raise SchemaError("pattern", where, "the pattern has an unmatched ')'")
        inner = self._emit(node, where)
        parts = ([] if start else [f"{self._char}*"]) + [inner] + ([] if end else [f"{self._char}*"])
        return self._call("pattern", '"\\"" ' + " ".join(parts) + ' "\\"" space')

    def _call(self, hint: str, body: str) -> str:
        return self._add(hint, body)

    def _emit(self, node: _Node, where: str) -> str:
        if node.kind == "chars":
            return self._chars(node)
        if node.kind == "seq":
            if not node.items:
                return '""'
            return " ".join(self._emit(n, where) for n in node.items)
        if node.kind == "alt":
            return self._call("alt", " | ".join(self._emit(n, where) for n in node.items))
        # a repetition: its item is one rule, repeated by reference
        item = self._call("item", self._emit(node.items[0], where))
        self._budget.repeat("pattern", where, node.lo, node.hi)
        if node.hi is None:
            return f"{item}{{{node.lo},}}" if node.lo else f"{item}*"
        return f"{item}{{{node.lo},{node.hi}}}"

    def _chars(self, node: _Node) -> str:
        """One character of the set, as JSON writes it: raw where it may stand raw, as its
        escape otherwise."""
        if node.negated:
            excluded = "".join(_range_text(lo, hi) for lo, hi in node.ranges)
            alts = [f"[^{excluded}{_NOT_RAW}]"]
            # the escaped characters the negated set still admits, spelled as JSON does
            special = [cp for cp in [*range(0x20), 0x22, 0x5C, 0x7F]
                       if not any(lo <= cp <= hi for lo, hi in node.ranges)
                       and not any(lo <= cp <= hi for lo, hi in _LINE_ENDS)]
            alts += [gbnf_literal(json_char(chr(cp))) for cp in special]
            return self._call("class", " | ".join(alts))
        if len(node.ranges) == 1 and node.ranges[0][0] == node.ranges[0][1]:
            cp = node.ranges[0][0]
            if 0xD800 <= cp <= 0xDFFF or cp > 0xFFFFF:
                raise SchemaError("pattern", "", f"the character U+{cp:04X} (a surrogate or past "
                                  "U+FFFFF) cannot be written by the grammar")
            return gbnf_literal(json_char(chr(cp)))
        raw: list[tuple[int, int]] = []
        escaped: list[int] = []
        for lo, hi in node.ranges:
            for a, b in _raw_spans(lo, hi):
                raw.append((a, b))
            escaped += [cp for cp in [*range(0x20), 0x22, 0x5C, 0x7F] if lo <= cp <= hi]
        alts = []
        if raw:
            alts.append("[" + "".join(_range_text(a, b) for a, b in raw) + "]")
        alts += [gbnf_literal(json_char(chr(cp))) for cp in sorted(set(escaped))]
        if not alts:
            raise SchemaError("pattern", "", "a character class admits no character")
        if len(alts) == 1:
            return alts[0]
        return self._call("class", " | ".join(alts))


def _raw_spans(lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of [lo, hi] a JSON string holds raw."""
    out: list[tuple[int, int]] = []
    cuts = [0x20, 0x22, 0x23, 0x5C, 0x5D, 0x7F, 0x80, 0xD800, 0xE000, 0x100000]
    points = sorted({lo, hi + 1, *[c for c in cuts if lo < c <= hi]})
    for a, b in itertools.pairwise(points):
        if _is_raw(a):  # the cuts make each part all raw or all not
            out.append((a, b - 1))
    return out


def _range_text(lo: int, hi: int) -> str:
    return _class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}"
