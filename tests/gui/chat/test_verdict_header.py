"""The header says when adaptive has paused drafting, how often it re-checks, and clears it."""

from __future__ import annotations

import threading

import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.stats import GenerationStats
from specula.core.engine.verdict import PolicyVerdict


def test_a_paused_verdict_is_shown_and_can_be_cleared(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    cleared = threading.Event()
    monkeypatch.setattr(Engine, "clear_adaptive_verdict", lambda self: cleared.set())
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    bar = w.chat.model_bar
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    assert bar.draft_switch.text() == "Speculative: on" and not bar.recheck.isVisibleTo(bar)
    bar.show_verdict(PolicyVerdict(paused=True, recheck_in=8))
    assert bar.draft_switch.text() == "Speculative: on · paused: slower here (re-checked in 8 replies)"
    assert "slower than plain decoding on this machine" in bar.draft_switch.toolTip()
    assert "in 8 replies" in bar.draft_switch.toolTip()
    bar.show_verdict(PolicyVerdict(paused=True, recheck_in=1))
    assert bar.draft_switch.text() == "Speculative: on · paused: slower here (re-checked next reply)"
    assert "in the next reply" in bar.draft_switch.toolTip()
    assert bar.recheck.isVisibleTo(bar)
    bar.recheck.click()
    qtbot.waitUntil(cleared.is_set, timeout=10000)  # on the engine thread
    assert bar.draft_switch.text() == "Speculative: on" and not bar.recheck.isVisibleTo(bar)
    bar.show_verdict(PolicyVerdict(paused=False, recheck_in=8))
    assert bar.draft_switch.text() == "Speculative: on"
    bar.show_verdict(PolicyVerdict(paused=True, recheck_in=8))
    bar.draft_switch.setChecked(False)  # the user's "off" wins: no pause to speak of
    assert bar.draft_switch.text() == "Speculative: off"


def test_the_live_panel_says_paused_exactly_when_the_header_does(  # type: ignore[no-untyped-def]
        make_window, tiny, qtbot) -> None:
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    bar, panel = w.chat.model_bar, w.chat.stats_panel
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)

    def panel_says_paused() -> bool:
        return panel.note.isVisibleTo(panel) and panel.note.text().startswith("Drafting paused")

    # An adaptive reply that ran plain for its last 40 steps, with no paused verdict in the
    # header: a run of plain steps is not the policy's verdict.
    panel.finish(GenerationStats(mode="adaptive", tokens=40, steps=40, plain_run=40,
                                 ttft_s=0.1, total_s=2.0))
    assert "paused" not in bar.draft_switch.text()
    assert not panel_says_paused()
    assert panel.note.text() == "Drafted in 0 of 40 steps"  # what happened, in numbers
    # The verdict says paused after a reply that drafted up to its end: both say so.
    panel.finish(GenerationStats(mode="adaptive", tokens=40, steps=10, drafting_steps=10,
                                 drafted=40, accepted=30, ttft_s=0.1, total_s=2.0))
    bar.show_verdict(PolicyVerdict(paused=True, recheck_in=8))
    assert "paused: slower here" in bar.draft_switch.text() and panel_says_paused()
    bar.draft_switch.setChecked(False)  # the user's "off": the header states no pause
    assert "paused" not in bar.draft_switch.text() and not panel_says_paused()
    bar.draft_switch.setChecked(True)
    assert panel_says_paused()
    bar.recheck.click()  # cleared: neither says it
    assert "paused" not in bar.draft_switch.text() and not panel_says_paused()
