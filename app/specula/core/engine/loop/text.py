"""Token bytes -> text, and stop strings that are never emitted in part.

:class:`StopFilter` holds back token events while their text could still be
the start of a stop string, releases them as soon as it cannot, and cuts the
text exactly where a stop string begins.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import replace

from specula.core.engine.events import TokenEvent


class Utf8Stream:
    """Incremental UTF-8: a character split over two tokens comes out whole."""

    def __init__(self) -> None:
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._empty = True  # the decoder holds no bytes of a split character

    def feed(self, data: bytes) -> str:
        if self._empty:  # the usual token: whole characters, decoded as the decoder would
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        out = str(self._dec.decode(data))
        self._empty = not self._dec.getstate()[0]
        return out

    def flush(self) -> str:
        self._empty = True
        return str(self._dec.decode(b"", final=True))


def _held_suffix(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that starts some stop string."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return best


class StopFilter:
    """Releases token events whose text is safe; detects stop strings."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        self._held: list[TokenEvent] = []
        self.stopped = False

    def push(self, ev: TokenEvent) -> list[TokenEvent]:
        """Add an event; returns the events that may now be shown."""
        if not self.stops:
            return [ev]
        self._held.append(ev)
        text = "".join(e.text for e in self._held)
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            return self._release_upto(cut, truncate=True)
        safe = len(text) - _held_suffix(text, self.stops)
        return self._release_upto(safe, truncate=False)

    def _release_upto(self, n_chars: int, *, truncate: bool) -> list[TokenEvent]:
        out: list[TokenEvent] = []
        used = 0
        while self._held:
            ev = self._held[0]
            if used + len(ev.text) <= n_chars:
                out.append(self._held.pop(0))
                used += len(ev.text)
                continue
            if truncate and used < n_chars:
                out.append(replace(ev, text=ev.text[: n_chars - used]))
            break
        if truncate:
            self._held.clear()
        return out

    def flush(self) -> list[TokenEvent]:
        out, self._held = self._held, []
        return out
