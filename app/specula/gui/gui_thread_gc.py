"""Python's cycle collector, run on the GUI thread only while the app is up.

The collector runs on whichever thread happens to allocate when a generation's
threshold is crossed: the engine's QThread in the middle of a model load, a download
runnable. A cycle that holds Qt wrappers (a closed window whose lambdas refer back to
it, a finished dialog) is then destroyed on that thread, and a Qt object destroyed
off its own thread can take the process down: the suite once died with a segfault
in the engine thread, garbage-collecting inside a model load. So while the GUI runs,
automatic collection is off and a timer on the GUI thread collects instead, with
Python's own thresholds (the approach of pyqtgraph's ``GarbageCollector``). Engine
objects that hold native handles are closed explicitly by their owners, so what
this timer frees is only what nothing closes: it never races the engine's thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500
"""How often the GUI thread looks at the allocation counts (a collection only runs
when a generation is past its threshold, as the automatic collector would)."""


def generation_due(counts: tuple[int, int, int],
                   thresholds: tuple[int, int, int]) -> int | None:
    """The oldest generation Python's automatic collector would collect at these
    allocation counts, or None: generation 0 only past its threshold, an older one
    only when every younger one is past its threshold too."""
    (c0, c1, c2), (t0, t1, t2) = counts, thresholds
    if t0 == 0 or c0 <= t0:
        return None
    return 2 if (c1 > t1 and c2 > t2) else 1 if c1 > t1 else 0


class GuiThreadCollector(QObject):
    """Owns the switch: automatic collection off from creation to :meth:`uninstall`."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(interval_ms)

    def collect_due(self) -> int:
        """Collect the generations past their thresholds, here; returns objects freed."""
        generation = generation_due(gc.get_count(), self._thresholds)
        return 0 if generation is None else gc.collect(generation)

    def uninstall(self) -> None:
        """Collect what is left on this thread, then give collection back to Python."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()


def install(parent: QObject) -> GuiThreadCollector:
    """Collect on ``parent``'s (the GUI) thread from now on; call from that thread."""
    return GuiThreadCollector(parent)
