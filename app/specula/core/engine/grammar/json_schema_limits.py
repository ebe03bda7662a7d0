"""What one schema or grammar may cost, checked before llama.cpp parses anything.

llama.cpp's grammar parser expands ``S{m,n}`` into ``m`` copies of ``S`` and ``n - m``
rules of their own (llama-grammar.cpp, ``handle_repetitions``), reads a bound above
2,000 (its ``MAX_REPETITION_THRESHOLD``) as *no* bound, recurses once per nested
``(``, and copies every rule each time a grammar is cloned (every branch of a
draft). So a bound, the sum of the bounds, the nesting and the text's size are each
capped here, and a schema or grammar past a cap is refused with a message naming it
(a 400 on the server) before it costs the engine anything.
"""

from __future__ import annotations

MAX_REPEAT = 2000  # one {m,n} bound: llama.cpp reads a larger maximum as unbounded
MAX_EXPANSION = 20_000  # grammar elements all the repetitions of one grammar expand to
MAX_GRAMMAR_CHARS = 256 * 1024  # GBNF text, from a schema or given
MAX_NESTING = 64  # schema levels, and '(' levels of a GBNF text
MAX_ENUM = 1000  # values of one enum (each one is an alternative at its position)
MAX_ALTERNATIVES = MAX_ENUM  # alternatives of one rule, group or anyOf: each is a parse stack
MAX_ELEMENTS = 200_000  # grammar elements after llama.cpp expands every repetition
MAX_RULES = 4000  # rules of a GBNF text (llama.cpp's left-recursion check recurses per rule)


class GrammarLimitError(ValueError):
    """A schema or grammar past one of the caps above; the message names it."""


class SchemaError(GrammarLimitError):
    """A schema the converter refuses: ``keyword`` at ``where`` (a JSON pointer)."""

    def __init__(self, keyword: str, where: str, reason: str) -> None:
        at = f" at {where}" if where else ""
        super().__init__(f"JSON schema keyword '{keyword}'{at}: {reason}")
        self.keyword = keyword
        self.where = where


class Budget:
    """The repetitions one schema's grammar asks llama.cpp to expand."""

    def __init__(self, limit: int = MAX_EXPANSION) -> None:
        self.limit = limit
        self.used = 0

    def repeat(self, keyword: str, where: str, lo: int, hi: int | None, size: int = 1) -> None:
        """Count ``item{lo,hi}`` (``size`` elements per copy), or refuse it by ``keyword``."""
        for bound in (lo, hi):
            if bound is not None and bound > MAX_REPEAT:
                raise SchemaError(keyword, where, f"the bound {bound} is above {MAX_REPEAT}, the "
                                  "largest a grammar can enforce")
        self.used += (max(lo, hi if hi is not None else lo + 1) + 1) * max(1, size)
        if self.used > self.limit:
            raise SchemaError(keyword, where, f"the schema's bounds add up to more than "
                              f"{self.limit} repeated grammar elements; lower them")



def check_gbnf(text: str) -> None:
    """Raise GrammarLimitError when llama.cpp's parse of ``text`` would cost more than the
    caps allow: its size, its '(' nesting, a repetition bound, the elements its
    repetitions expand to, the number of rules or of one rule's alternatives.

    One linear pass that reads the text as llama-grammar.cpp's parser does (literals,
    classes, token references, comments, groups, ``* + ? {m,n}``) and models its
    expansion: ``S{m,n}`` writes ``m`` copies of ``S`` in place and ``n - m`` rules of
    one ``S`` each; a group becomes a rule of its own, referenced by one element. A
    text it cannot read is left to llama.cpp, which refuses it with its own reason.
    """
    if len(text) > MAX_GRAMMAR_CHARS:
        raise GrammarLimitError(f"the grammar is {len(text)} characters; the limit is "
                                f"{MAX_GRAMMAR_CHARS}")
    # one frame per open group: [elements so far, size of the last symbol, alternatives]
    frames: list[list[int]] = [[0, 0, 1]]
    total = rules = 0
    i, n = 0, len(text)

    def symbol(size: int) -> None:
        frames[-1][0] += size
        frames[-1][1] = size

    def close_rule_body() -> int:
        body, _, alts = frames[-1]
        if alts > MAX_ALTERNATIVES:
            raise GrammarLimitError(f"a rule or group has {alts} alternatives; the limit is "
                                    f"{MAX_ALTERNATIVES}")
        return body

    while i < n:
        c = text[i]
        if c == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        if c in "\"[":
            close = '"' if c == '"' else "]"
            j, count = i + 1, 0
            while j < n and text[j] != close:
                j += 2 if text[j] == "\\" else 1
                count += 1
            symbol(max(1, count))
            i = j + 1
            continue
        if c == "<" or (c == "!" and text[i + 1 : i + 2] == "<"):
            j = text.find(">", i)
            symbol(1)
            i = n if j < 0 else j + 1
            continue
        if c == "(":
            if len(frames) > MAX_NESTING:
                raise GrammarLimitError(f"the grammar nests '(' deeper than {MAX_NESTING} levels")
            frames.append([0, 0, 1])
        elif c == ")" and len(frames) > 1:
            total += close_rule_body()
            frames.pop()
            symbol(1)
        elif c == "|":
            frames[-1][2] += 1
            frames[-1][1] = 0
        elif c in "*+?":
            last = frames[-1][1]
            frames[-1][0] += 2 + (last if c == "+" else -last)  # the symbol moves into a rule
            total += last + 3
            frames[-1][1] = 1 + (last if c == "+" else 0)
        elif c == "{":
            j = text.find("}", i)
            inner = text[i + 1 : j] if 0 < j - i <= 16 else ""
            lo_s, _, hi_s = inner.partition(",")
            if not lo_s.strip().isdigit() or (hi_s.strip() and not hi_s.strip().isdigit()):
                return  # not a repetition llama.cpp reads: its parser says why
            lo = int(lo_s)
            hi = lo if "," not in inner else (int(hi_s) if hi_s.strip() else None)
            for bound in (lo, hi):
                if bound is not None and bound > MAX_REPEAT:
                    raise GrammarLimitError(f"the repetition {{{inner}}} has a bound above "
                                            f"{MAX_REPEAT}")
            last = frames[-1][1]
            copies = lo * last + 1
            frames[-1][0] += copies - last
            frames[-1][1] = copies
            total += ((hi if hi is not None else lo + 1) - lo + 1) * (last + 3)
            i = j
        elif text.startswith("::=", i):
            # the name before it started a new rule: what came before it was the last rule
            rules += 1
            if rules > MAX_RULES:
                raise GrammarLimitError(f"the grammar has more than {MAX_RULES} rules")
            total += close_rule_body()
            frames = [[0, 0, 1]]
            i += 3
            continue
        elif c.isalnum() or c in "-_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "-_"):
                j += 1
            symbol(1)
            i = j
            continue
        if total + sum(f[0] for f in frames) > MAX_ELEMENTS:
            raise GrammarLimitError(f"the grammar expands to more than {MAX_ELEMENTS} elements "
                                    "(its repetitions copy what they repeat)")
        i += 1
    total += close_rule_body()
    if total > MAX_ELEMENTS:
        raise GrammarLimitError(f"the grammar expands to more than {MAX_ELEMENTS} elements "
                                "(its repetitions copy what they repeat)")
