"""Garbage is collected on the GUI thread, never on a worker that happens to allocate.

A Qt object destroyed off its own thread can crash the process; the engine's thread
allocates heavily (a model load, a reply), so with Python's automatic collector it is
where cycles left by the GUI (closed windows) would be destroyed.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

from specula.gui import gui_thread_gc


class _Cycle:
    """Garbage that only the cycle collector frees; records the thread that freed it."""

    def __init__(self, freed_on: list[threading.Thread]) -> None:
        self.freed_on = freed_on
        self.me = self

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread())


def _leave_garbage_then_allocate_elsewhere(freed_on: list[threading.Thread]) -> list[list[int]]:
    """Returns what the worker allocated: far more container objects than any
    generation-0 threshold (Python's is 700), kept so the count stays past it."""
    gc.collect()  # counts at zero: nothing here can reach a threshold before the worker
    _Cycle(freed_on)
    kept: list[list[int]] = []
    worker = threading.Thread(target=lambda: kept.extend([] for _ in range(50_000)),
                              name="busy-worker")
    worker.start()
    worker.join()
    return kept


def test_a_worker_allocating_does_not_collect_the_guis_garbage(qapp, qtbot) -> None:  # type: ignore[no-untyped-def]
    freed_on: list[threading.Thread] = []
    assert not gc.isenabled()  # conftest installs the collector, as ensure_qapp does
    kept = _leave_garbage_then_allocate_elsewhere(freed_on)
    assert freed_on == []
    qtbot.waitUntil(lambda: bool(freed_on), timeout=10000)  # the GUI thread's timer
    assert freed_on == [threading.main_thread()]
    del kept


def test_without_it_the_worker_collects_the_guis_garbage(qapp) -> None:  # type: ignore[no-untyped-def]
    """The control: Python's automatic collector frees the cycle on the worker thread
    (the hazard the collector removes, and what the test above would see without it)."""
    freed_on: list[threading.Thread] = []
    gc.enable()
    try:
        _leave_garbage_then_allocate_elsewhere(freed_on)
    finally:
        gc.disable()
    # the worker, or any other thread that allocated meanwhile: never the GUI thread
    assert len(freed_on) == 1 and freed_on[0] is not threading.main_thread()


def test_only_generations_past_their_threshold_are_due() -> None:
    """The rule itself, as a function of the counts: no timer, no patched collector."""
    t0, t1, t2 = 700, 10, 10
    due = [gui_thread_gc.generation_due(c, (t0, t1, t2)) for c in
           [(t0 - 1, 0, 0), (t0, t1 + 1, t2 + 1), (t0 + 1, 0, 0), (t0 + 1, t1 + 1, 0),
            (t0 + 1, t1 + 1, t2 + 1), (t0 + 1, 0, t2 + 1), (t0 + 1, t1, t2 + 1)]]
    assert due == [None, None, 0, 1, 2, 0, 0]
    assert gui_thread_gc.generation_due((10**6, 10**6, 10**6), (0, t1, t2)) is None


def test_a_due_generation_is_collected_on_the_collectors_call(qapp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """collect_due collects the generation the rule names. The patched count is a
    constant, not a finite stream: the conftest's own collector may call it any
    number of times on a slow machine."""
    collector = gui_thread_gc.GuiThreadCollector(qapp, interval_ms=60_000)
    try:
        t0, t1, _ = gc.get_threshold()
        asked: list[int] = []
        monkeypatch.setattr(gc, "get_count", lambda: (t0 + 1, t1 + 1, 0))
        real_collect: Callable[..., int] = gc.collect
        monkeypatch.setattr(gc, "collect", lambda g=2: asked.append(g) or 0)
        collector.collect_due()
        assert asked and set(asked) == {1}
        monkeypatch.setattr(gc, "collect", real_collect)
    finally:
        collector.uninstall()
        collector.deleteLater()
    assert not gc.isenabled()  # the conftest's collector still holds the switch
