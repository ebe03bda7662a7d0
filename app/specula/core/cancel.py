"""The one "the user cancelled" exception.

A model load, a reply's prefill, a download and a background task all stop the
same way when the user cancels: they raise :class:`Cancelled`, which every
caller treats as an outcome, never as an error (no dialog, no traceback).
"""

from __future__ import annotations


class Cancelled(Exception):
    """The user cancelled this job; never shown as an error."""
