"""Text from files and servers made safe to show in a terminal or a Qt label.

A hub file name, a model card or a GGUF header can carry control characters:
``ESC [ 2 J`` clears a terminal, ``ESC ] 0 ;`` sets its title, C1 controls
(``\\x9b`` is a one-byte CSI) do the same on some terminals, and bidirectional
overrides (U+202E) make ``evil\\u202efgg.exe`` read as ``evilexe.ggf``. The
core hands out display text with every such character written as a visible
escape (``\\x1b``, ``\\u202e``), so nothing downstream has to remember to.
"""

from __future__ import annotations

import unicodedata

# Bidirectional embeddings, overrides and isolates; the rest of category Cf
# (zero-width joiners, soft hyphens...) is harmless in names and kept.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_unsafe(ch: str, *, keep_newlines: bool = False) -> bool:
    if keep_newlines and ch in "\n\t":
        return False
    return ch in _BIDI or unicodedata.category(ch) == "Cc"


def has_unsafe(text: str) -> bool:
    """True when ``text`` holds a control or bidi-override character."""
    return any(is_unsafe(ch) for ch in text)


def display_text(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control and bidi-override characters written as visible escapes."""
    if not any(is_unsafe(ch, keep_newlines=keep_newlines) for ch in text):
        return text
    out = []
    for ch in text:
        if is_unsafe(ch, keep_newlines=keep_newlines):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
