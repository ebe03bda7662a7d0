"""The limits a chat template runs under, and the errors that say one was reached.

The rule they serve is written once, in :mod:`specula.core.chat.bounded_jinja`;
this module only holds the numbers and the exception types, so that the
environment, the metered filters and the size predictions share them.
"""

from __future__ import annotations

MAX_RENDER_SECONDS = 1.0  # CPU time of one render
WALL_FACTOR = 3.0  # ... and at most this many times as long by the wall clock
# Steps of one render: a loop iteration, a call, an item a filter walks, 64 characters a
# string operation reads, a list item or 8 characters built. The largest real templates take
# about 2,300 over 41 messages. A loop step costs about 0.7 µs of CPU time (measured on a
# busy shared machine), so the CPU budget usually ends a runaway loop first; the step budget
# refuses, the same on every machine, an operation too large to start (a pass over a list or
# a string costs 10-250 ns a step, so the largest one allowed runs a second or two).
MAX_RENDER_STEPS = 10_000_000
MAX_OUTPUT_CHARS = 8_000_000  # a 128k-token prompt is about 0.5 M characters
MAX_VALUE_CHARS = MAX_OUTPUT_CHARS  # any one string or list a template builds
MAX_POW_BITS = 4096  # integer results (``**``, ``*``) larger than this are refused
# The template's source, checked before it is compiled. The largest of the 71 real chat
# templates llama.cpp keeps for its tests (models/templates: gpt-oss, Gemma 4, Kimi,
# Functionary, Command R7B...) is 16.7 KB and 2,461 Jinja tokens; compiling costs about
# 10-40 µs per token, so these bounds keep a hostile template's compile under a second
# while leaving any real one 8-15 times its size.
MAX_TEMPLATE_CHARS = 256 * 1024
MAX_TEMPLATE_TOKENS = 20_000


class TemplateError(Exception):
    """The chat template cannot be compiled or rendered; the message says why."""


class TemplateLimitError(TemplateError):
    """The template went past a time, size or output limit."""


class TemplateRefusal(TemplateError):
    """The template itself refused the conversation (its ``raise_exception``): the
    messages are the problem (a turn order it does not accept), not the template."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"chat template refused the conversation: {reason}")
        self.reason = reason


def too_big(what: str, n: int | float, cap: int = MAX_VALUE_CHARS) -> TemplateLimitError:
    return TemplateLimitError(
        f"chat template: {what} would hold {n:,.0f} items, more than the limit of {cap:,}")


def check_predicted(what: str, n: int | float, cap: int = MAX_VALUE_CHARS) -> None:
    """Refuse an operation whose result, predicted from its inputs (a lower bound, counted
    no further than past the cap), would exceed ``cap``."""
    if n > cap:
        raise TemplateLimitError(f"chat template: {what} would hold at least {n:,.0f} "
                                 f"characters or items, more than the limit of {cap:,}")
