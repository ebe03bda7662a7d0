"""What a GBNF text holds, read without llama.cpp (which only parses it whole)."""

from __future__ import annotations

from collections.abc import Iterator


def has_token_refs(text: str) -> bool:
    """Whether the GBNF ``text`` names tokens (``<[id]>``, ``<|name|>``, ``!<...>``)."""
    return bool(token_ref_marks(text))


def _token_elements(text: str) -> Iterator[tuple[int, str]]:
    """(index, ``<`` or ``!``) of each token element's marks in ``text``, read as
    llama.cpp's parser reads it (llama-grammar.cpp, parse_sequence): outside literals,
    character classes and comments; a ``<...>`` span is read to its ``>`` (parse_token)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "<!":
            yield i, c
            if c == "<":
                j = text.find(">", i + 1)
                if j < 0:
                    return
                i = j
        elif c in "\"[":
            close = '"' if c == '"' else "]"
            i += 1
            while i < n and text[i] != close:
                i += 2 if text[i] == "\\" else 1
        elif c == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
        i += 1


def token_ref_marks(text: str) -> set[str]:
    """Which of ``<`` (a token reference) and ``!`` (a negated one) start a token element
    in ``text``."""
    return {mark for _, mark in _token_elements(text)}


def token_ref_spans(text: str) -> list[str]:
    """The positive token references of ``text`` as written (``<[5]>``, ``<|im_start|>``);
    llama.cpp resolves ``<[id]>`` to the id and tokenizes any other span, brackets
    included, to exactly one token."""
    spans: list[str] = []
    for i, mark in _token_elements(text):
        if mark == "<" and (i == 0 or text[i - 1] != "!"):
            j = text.find(">", i + 1)
            if j >= 0:
                spans.append(text[i : j + 1])
    return spans
