"""The header says when adaptive has paused drafting, how often it re-checks, and clears it."""

from __future__ import annotations

import threading

import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.verdict import PolicyVerdict


def test_a_paused_verdict_is_shown_and_can_be_cleared(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    cleared = threading.Event()
    monkeypatch.setattr(Engine, "clear_adaptive_verdict", lambda self: cleared.set())
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    bar = w.chat.model_bar
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    assert bar.draft_switch.text() == "Speculative: on" and not bar.recheck.isVisibleTo(bar)
    bar.show_verdict(PolicyVerdict(paused=True, recheck_every=8))
    assert bar.draft_switch.text() == "Speculative: on · paused: slower here (re-checked every 8 replies)"
    assert "slower than plain decoding on this machine" in bar.draft_switch.toolTip()
    assert bar.recheck.isVisibleTo(bar)
    bar.recheck.click()
    qtbot.waitUntil(cleared.is_set, timeout=10000)  # on the engine thread
    assert bar.draft_switch.text() == "Speculative: on" and not bar.recheck.isVisibleTo(bar)
    bar.show_verdict(PolicyVerdict(paused=False, recheck_every=8))
    assert bar.draft_switch.text() == "Speculative: on"
    bar.show_verdict(PolicyVerdict(paused=True, recheck_every=8))
    bar.draft_switch.setChecked(False)  # the user's "off" wins: no pause to speak of
    assert bar.draft_switch.text() == "Speculative: off"
