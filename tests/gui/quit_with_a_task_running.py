"""Run by test_tasks.py in its own process: the application quits and is deleted while a
background task still runs; the task then sends a partial result and returns.

Nothing may be printed: the task's signals must not be sent from Qt objects that were
deleted with the application ("Signal source has been deleted").
"""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget

from specula.gui import tasks

app = QApplication(sys.argv)
owner = QWidget()
release = threading.Event()  # set once the task's relay is deleted with the application
ran = threading.Event()  # the runnable ended, its last signal sent or dropped
real_run = tasks._Runner.run


def run_then_say_so(self: tasks._Runner) -> None:
    try:
        real_run(self)
    finally:
        ran.set()


tasks._Runner.run = run_then_say_so  # type: ignore[method-assign]


def work(ctx: tasks.TaskContext) -> str:
    release.wait(30)
    ctx.emit("partial")
    return "done"


tasks.start_task(owner, work)
relay = next(iter(tasks._live))
relay.destroyed.connect(lambda *_a: release.set())  # direct: during the deletion itself
QTimer.singleShot(0, app.quit)
app.exec()
app.shutdown()  # deletes the application and the Qt objects Python owns, the relay too
if not ran.wait(30):
    print("the task did not end", file=sys.stderr)
