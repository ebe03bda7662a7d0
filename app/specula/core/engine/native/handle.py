"""The last-resort finalizer shared by the objects that own a llama.cpp handle
(``Model``, ``Context``, ``Batch``, ``GrammarState``)."""

from __future__ import annotations


class NativeHandle:
    """An owner of a native handle, freed by ``close()`` (idempotent), and by the garbage
    collector through ``__del__`` when no owner closed it.

    Owners close explicitly, in llama.cpp's order (a context before its model): the
    finalizer is only for what they missed, and it runs when Python chooses. At
    interpreter exit it may run after module globals are torn down (``llama_cpp`` or
    its functions already None: a TypeError or AttributeError), and the collector
    finalizes the objects of a cycle in no particular order (an engine abandoned with
    a reply in flight: a context after its model, which ``Model.close`` defers for).
    An exception from a finalizer reaches no caller (Python only prints "Exception
    ignored in ..."), so it is dropped here; ``close()`` called by an owner still raises.
    """

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
