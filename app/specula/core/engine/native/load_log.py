"""llama.cpp's own reason for a failed load, read from its log.

``llama_model_load_from_file`` and ``llama_init_from_model`` answer a failure
with NULL; the reason ("tensor 'output.weight' data is not within the file
bounds, model is corrupted or incomplete", "failed to allocate buffer") is
only in llama.cpp's log, which :mod:`.backend` routes into the
``specula.engine`` logger. :class:`LoadLog` listens to that logger on the
loading thread while a load runs, so the error a user sees names the reason
instead of a list of possible causes.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

PREFIX = "llama.cpp: "
MEMORY_WORDS = ("alloc", "out of memory", "not enough memory", "insufficient memory")


class LoadLog(logging.Handler):
    """``with LoadLog() as log_: ...``; then ``log_.reason()``: llama.cpp's reason or ""."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._thread = threading.get_ident()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self._thread:  # another thread's load or decode
            return
        msg = record.getMessage()
        if msg.startswith(PREFIX):
            self.lines.append(msg[len(PREFIX):].strip())

    def __enter__(self) -> LoadLog:
        logging.getLogger("specula.engine").addHandler(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        logging.getLogger("specula.engine").removeHandler(self)

    def reason(self) -> str:
        """The most telling line: llama.cpp's "error loading model: <why>", else the first
        error line (the later ones say only that the load failed)."""
        for line in self.lines:
            key = "error loading model: "
            if key in line:
                return line.split(key, 1)[1].strip()
        for line in self.lines:
            if "alloc" in line.lower() or "memory" in line.lower():
                return _without_function(line)
        return _without_function(self.lines[0]) if self.lines else ""


def _without_function(line: str) -> str:
    """'llama_model_load: tensor ...' -> 'tensor ...' (the C function's name means nothing
    to a user)."""
    head, sep, rest = line.partition(": ")
    return rest.strip() if sep and " " not in head else line


def short_of_memory(reason: str) -> bool:
    """Whether llama.cpp's reason says memory ran out (not a damaged or unsupported file)."""
    low = reason.lower()
    return any(w in low for w in MEMORY_WORDS)
