"""The one background-work API: results, failures, partial items, cancel, a vanished owner."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from PySide6.QtWidgets import QWidget

from specula.core.hub.errors import ErrorKind, HubError
from specula.gui.tasks import TaskContext, TaskError, start_task


def _owner(qtbot) -> QWidget:  # type: ignore[no-untyped-def]
    w = QWidget()
    qtbot.addWidget(w)
    return w


def test_result_and_items_arrive_on_the_gui_thread(qtbot) -> None:  # type: ignore[no-untyped-def]
    gui = threading.get_ident()
    seen: list[tuple[str, object, bool]] = []

    def work(ctx: TaskContext) -> int:
        assert threading.get_ident() != gui  # off the GUI thread
        for i in range(3):
            ctx.emit(i)
        return 42

    task = start_task(_owner(qtbot), work,
                      on_item=lambda v: seen.append(("item", v, threading.get_ident() == gui)),
                      on_done=lambda v: seen.append(("done", v, threading.get_ident() == gui)))
    qtbot.waitUntil(lambda: task.done, timeout=60000)
    assert seen == [("item", 0, True), ("item", 1, True), ("item", 2, True), ("done", 42, True)]


def test_a_failure_is_one_sentence_with_a_kind(qtbot) -> None:  # type: ignore[no-untyped-def]
    failures: list[TaskError] = []

    def work(_ctx: TaskContext) -> None:
        raise HubError(ErrorKind.OFFLINE, "The hub cannot be reached.")

    task = start_task(_owner(qtbot), work, on_done=lambda _v: failures.append(None),  # type: ignore[arg-type]
                      on_failed=failures.append)
    qtbot.waitUntil(lambda: task.done, timeout=60000)
    assert failures == [TaskError("offline", "The hub cannot be reached.")]


def test_cancelled_is_never_an_error_and_drops_late_results(qtbot) -> None:  # type: ignore[no-untyped-def]
    started, release = threading.Event(), threading.Event()
    calls: list[object] = []

    def work(ctx: TaskContext) -> str:
        started.set()
        release.wait(5)
        ctx.emit("late item")
        ctx.check()  # raises Cancelled
        return "late result"

    task = start_task(_owner(qtbot), work, on_item=calls.append, on_done=calls.append,
                      on_failed=calls.append)
    assert started.wait(5)
    task.cancel()
    release.set()
    qtbot.waitUntil(lambda: task.done, timeout=60000)
    assert calls == [] and task.cancelled


def test_no_callback_once_the_owner_is_gone(qtbot) -> None:  # type: ignore[no-untyped-def]
    release = threading.Event()
    calls: list[object] = []
    owner = QWidget()
    task = start_task(owner, lambda _ctx: release.wait(5), on_done=calls.append)
    owner.deleteLater()
    qtbot.waitUntil(lambda: _deleted(owner), timeout=60000)
    release.set()
    qtbot.waitUntil(lambda: task.done, timeout=60000)
    assert calls == []


def _deleted(obj: QWidget) -> bool:
    from shiboken6 import isValid

    return not isValid(obj)


def test_a_task_still_running_when_the_app_quits_sends_nothing() -> None:
    """At exit the Qt objects that carry a task's results are deleted with the application
    while a hub request may still be in flight; the task must then send nothing (it used to
    print "RuntimeError: Signal source has been deleted" tracebacks at every exit)."""
    script = Path(__file__).with_name("quit_with_a_task_running.py")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "app"),
                                          os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "has been deleted" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "did not end" not in r.stderr
