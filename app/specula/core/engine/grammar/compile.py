"""GBNF text to llama.cpp's grammar sampler, with llama.cpp's reason when it refuses:
the grammar errors, JSON mode's grammar, a JSON schema's grammar, the limits checked
before llama.cpp parses, and validation without a reply (a request checked up front)."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from typing import Any

import llama_cpp as L

from specula.core.engine.grammar.json_schema import schema_to_gbnf
from specula.core.engine.grammar.json_schema_limits import GrammarLimitError, check_gbnf
from specula.core.engine.grammar.text import token_ref_marks, token_ref_spans
from specula.core.engine.native.backend import ensure_backend

log = logging.getLogger("specula.engine")

JSON_OBJECT_GRAMMAR: str = schema_to_gbnf({"type": "object"})  # JSON mode: one JSON object


class GrammarError(ValueError):
    """A grammar that cannot be used (it does not parse, has no such root, asks for a
    JSON-schema feature that cannot be enforced) or that admits no token mid-reply."""


GRAMMAR_BUDGET_MESSAGE = "The grammar took more than"  # how a budget stop's message starts


class GrammarBudgetError(GrammarError):
    """A grammar that cost llama.cpp more time than a reply may spend on it (mid-reply)."""


# -- JSON schemas ------------------------------------------------------------------------


def json_schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for replies that validate against ``schema`` (core/engine/grammar/json_schema.py:
    every keyword enforced or refused, bounds as ``{m,n}``, limits checked first).

    Raises GrammarError naming the keyword when the schema asks for something the
    grammar cannot enforce, is malformed, or is past a limit."""
    try:
        return schema_to_gbnf(schema)
    except GrammarLimitError as exc:
        raise GrammarError(str(exc)) from None


# -- parsing, with llama.cpp's reason ----------------------------------------------------

_stderr_lock = threading.Lock()


class _LlamaLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage().removeprefix("llama.cpp: "))


def init_sampler(vocab: Any, text: str, root: str) -> Any:
    """``llama_sampler_init_grammar``, or GrammarError with llama.cpp's reason.

    llama.cpp prints a parse error with fprintf(stderr) and the other reasons to its
    log, so both are caught for the message (stderr is restored and what was not
    about the grammar is written back)."""
    try:  # llama.cpp's parser recurses per '(' and expands every {m,n}: capped first
        check_gbnf(text)
    except GrammarLimitError as exc:
        raise GrammarError(f"Invalid grammar (root '{root}'): {exc}") from None
    if "!" in token_ref_marks(text):
        # llama.cpp 0c1e57098 admits, after text, any token whose own text starts with that
        # text and goes on ("an" for `"a" !<[5]>`), then throws accepting it: the process aborts
        raise GrammarError(f"Invalid grammar (root '{root}'): negated token references (!<...>) "
                           "are not supported")
    if vocab is not None:
        _check_token_ids(text, int(L.llama_vocab_n_tokens(vocab)), root)
    ensure_backend()
    handler = _LlamaLog()
    log.addHandler(handler)
    level = log.level
    log.setLevel(logging.DEBUG)
    captured = b""
    try:
        with _stderr_lock, tempfile.TemporaryFile() as tmp:
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            try:
                smpl = L.llama_sampler_init_grammar(vocab, text.encode("utf-8"), root.encode("utf-8"))
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            captured = tmp.read()
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    err = captured.decode("utf-8", errors="replace")
    if smpl:
        if err:
            sys.stderr.write(err)
        return smpl
    reason = ""
    before, marker, _echo = err.partition("error parsing grammar:")
    if marker:  # "parse: error parsing grammar: <reason>\n\n<the grammar>"
        reason = _echo.splitlines()[0].strip() if _echo else ""
        before = before.rsplit("\n", 1)[0] + "\n" if "\n" in before else ""
    if before.strip():  # someone else's output in the same instant goes back to stderr
        sys.stderr.write(before)
    if not reason:
        reason = next((ln.strip() for ln in handler.lines if "failed to parse" not in ln), "")
    raise GrammarError(f"Invalid grammar (root '{root}'): {reason or 'llama.cpp could not parse it'}")


def _check_token_ids(text: str, n_vocab: int, root: str) -> None:
    """Every ``<[id]>`` names a token of the vocabulary (llama.cpp parses any number and
    a later lookup of a missing id reads past the vocabulary's tables)."""
    for span in token_ref_spans(text):
        digits = span[2:-2]
        if span.startswith("<[") and span.endswith("]>") and digits.isascii() \
                and digits.isdigit() and (len(digits) > 9 or int(digits) >= n_vocab):
            raise GrammarError(f"Invalid grammar (root '{root}'): the token reference {span} is "
                               f"outside the vocabulary (ids 0 to {n_vocab - 1})")


def validate_grammar(text: str, root: str = "root", vocab: Any = None) -> None:
    """Raise GrammarError (with llama.cpp's reason) unless ``text`` parses with ``root``.

    Without ``vocab`` (a llama_vocab pointer) token references like ``<[123]>`` cannot
    be checked and are reported as errors; generation checks again with the model's."""
    if not text:
        raise GrammarError("The grammar is empty.")
    L.llama_sampler_free(init_sampler(vocab, text, root))
