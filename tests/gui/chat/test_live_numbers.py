"""The live panel: no absurd early rate, a green token is counted, the end equals the footer."""

from __future__ import annotations

from dataclasses import replace

from specula.core.engine.events import TokenEvent, TokenOrigin
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.stats import GenerationStats
from specula.core.engine.verdict import PolicyVerdict
from specula.gui.engine_worker import ReplyBatch
from specula.gui.stats import live_stats as ls
from specula.gui.stats.footer import footer_text
from specula.gui.stats.panel import StatsPanel
from tests.gui.conftest import send_and_wait


def test_three_tokens_two_accepted_show_no_rate(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.start_reply()
    # The reported moment: 3 tokens, 2 accepted, 0.4 ms after the first token.
    s = GenerationStats(mode="chain", tokens=3, ttft_s=0.1, total_s=0.1004, steps=1,
                        drafted=3, accepted=2, drafting_steps=1)
    panel.add_batch(ReplyBatch(steps=[ls.StepPoint(3, 0.1004, 0.1, 3, 2)], stats=s))
    panel.refresh()
    assert panel.big.text() == ls.DASH  # the old panel read 4981.1 here
    assert panel.values["accepted"].text() == "2"
    assert panel.values["acceptance"].text() == "67%"
    assert panel.chart.points == [] and panel.chart.axis_top == 1.0


def test_axis_is_never_0_to_0(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.start_reply()
    steps = [ls.StepPoint(i, 1.0 + 4.0 * i, 1.0, 0, 0) for i in range(1, 12)]  # 0.25 tok/s
    panel.add_batch(ReplyBatch(steps=steps, stats=GenerationStats(tokens=11, ttft_s=1.0,
                                                                  total_s=45.0, steps=11)))
    panel.refresh()
    assert panel.chart.points and panel.chart.axis_top == 0.5
    assert ls.axis_label(panel.chart.axis_top) == "0.5"
    assert panel.big.text() == f"{10 / 44:.1f}"


def test_adaptive_pause_is_said_in_words(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.start_reply()
    steps = [ls.StepPoint(i, 0.1 * i, 0.1, 0, 0) for i in range(1, 21)]
    panel.add_batch(ReplyBatch(steps=steps, stats=GenerationStats(
        mode="adaptive", tokens=20, ttft_s=0.1, total_s=2.0, steps=20, plain_run=20)))
    panel.refresh()
    assert panel.note.text() == "Drafted in 0 of 20 steps"  # plain steps are not a verdict
    panel.set_pause(PolicyVerdict(paused=True, recheck_in=8))  # the header's verdict
    assert panel.note.isVisible() and "slower than plain" in panel.note.text()
    assert panel.values["acceptance"].text() == ls.DASH  # not "100%" over nothing
    assert panel.values["per_step"].text() == ls.DASH


def _reply_shown(panel: StatsPanel, steps: list[ls.StepPoint], stats: GenerationStats) -> None:
    """A reply's steps shown live in ``panel``, its verdict not in yet."""
    panel.start_reply()
    panel.add_batch(ReplyBatch(steps=steps, stats=stats))
    panel.refresh()


def _shown_panel(qtbot, steps: list[ls.StepPoint], stats: GenerationStats) -> StatsPanel:  # type: ignore[no-untyped-def]
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.show()
    _reply_shown(panel, steps, stats)
    return panel


def test_a_held_back_short_answer_is_said_in_words_until_the_next_reply(qtbot) -> None:  # type: ignore[no-untyped-def]
    steps = [ls.StepPoint(i, 0.15 * i, 0.1, 0, 0) for i in range(1, 18)]
    stats = GenerationStats(mode="adaptive", tokens=17, ttft_s=0.1, total_s=2.6, steps=17,
                            plain_run=17)
    panel = _shown_panel(qtbot, steps, stats)
    panel.finish(stats, held_back=True)  # the verdict at the reply's end
    assert panel.note.isVisible() and ls.HELD_BACK_TEXT in panel.note.text()
    assert footer_text({**stats.to_dict(), "paused": False, "held_back": True}).count(ls.HELD_BACK_TEXT) == 1
    _reply_shown(panel, steps, stats)  # the next reply: not held back until its verdict says so
    assert ls.HELD_BACK_TEXT not in panel.note.text()


def test_a_reply_whose_drafting_the_stop_loss_ended_says_so_until_the_next_reply(qtbot) -> None:  # type: ignore[no-untyped-def]
    steps = [ls.StepPoint(i, 0.15 * i, 0.1, 3, 1) for i in range(1, 40)]
    stats = GenerationStats(mode="adaptive", tokens=40, ttft_s=0.1, total_s=6.0, steps=39,
                            drafted=3, accepted=1, drafting_steps=1, plain_run=38)
    panel = _shown_panel(qtbot, steps, stats)
    panel.set_pause(PolicyVerdict(paused=True, recheck_in=8, stopped=True))  # the header's
    panel.finish(stats, stopped=True)  # the verdict at the reply's end
    note = panel.note.text().lower()  # the panel capitalises the sentence
    assert panel.note.isVisible() and ls.STOPPED_TEXT in note and ls.PAUSED_TEXT not in note
    _reply_shown(panel, steps, stats)  # the next reply: paused, not stopped, until its verdict says so
    note = panel.note.text().lower()
    assert ls.STOPPED_TEXT not in note and ls.PAUSED_TEXT in note


def test_green_tokens_are_counted_when_painted(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Whenever the transcript shows accepted draft tokens, Accepted counts them."""
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(200)
    seen: list[tuple[int, int]] = []

    def look() -> None:
        widget = page.transcript.messages[-1]
        shown = sum(1 for _t, src, _p in widget.tokens if src == "d")
        accepted = page.stats_panel.values["accepted"].text()
        seen.append((shown, int(accepted) if accepted.isdigit() else 0))

    page.transcript.rendered.connect(look)
    with qtbot.waitSignal(page.reply_finished, timeout=120000) as blocker:
        page.composer.setPlainText("count the green tokens")
        page.send_button.click()
        assert page.reply is not None  # paint on every batch, not only on the 100 ms timer
        page.reply.batch_arrived.connect(lambda _b: page.transcript.render_dirty())
    done = blocker.args[0]
    assert done.stats.accepted > 0 and seen
    assert all(accepted >= shown for shown, accepted in seen), seen


def test_panel_at_the_end_equals_the_footer(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.settings_panel.max_tokens.setValue(300)
    done = send_and_wait(qtbot, loaded, "a longer reply for the numbers")
    panel, footer = page.stats_panel, page.transcript.messages[-1].footer.text()
    f = panel.figures
    assert f is not None and f.tokens == done.stats.tokens
    assert f"{panel.values['accepted'].text()}/{panel.values['drafted'].text()} draft tokens " \
           f"accepted ({panel.values['acceptance'].text()})" in footer
    assert f"{panel.values['per_step'].text()} accepted/step" in footer
    assert footer.startswith(f"{panel.big.text()} tok/s")
    stored = page.ctx.store.messages(page.conversation_id)[-1].meta["stats"]
    assert footer_text(stored, "length") == footer
    # accepted draft tokens per step that drafted (tests/test_figures_agree.py counts them
    # independently, from the events, for every surface)
    assert f.accepted_per_step == done.stats.accepted / done.stats.drafting_steps


def test_first_token_is_not_a_rate_event(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    """A single TokenEvent never moves the big number (only StepEvents carry stats)."""
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.start_reply()
    ev = TokenEvent(1, "a", TokenOrigin.CHAIN, 0.9, 0)
    panel.add_batch(ReplyBatch(tokens=[ev]))
    panel.refresh()
    assert panel.big.text() == ls.DASH


def test_the_page_shows_and_stores_a_stopped_verdict(loaded, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The page carries the engine's verdict to every place that says it: an adaptive reply
    whose verdict says the stop-loss ended its drafting shows the stopped sentence in the
    live panel's note and the reply's footer, and the stored message keeps it. The verdict
    is the input here (the stop-loss itself is test_adaptive_stop_loss.py's)."""
    real = AdaptivePolicy.verdict
    monkeypatch.setattr(AdaptivePolicy, "verdict",
                        lambda self: replace(real(self), paused=True, stopped=True))
    page = loaded.chat
    form = page.settings_panel.spec
    form.mode.setCurrentIndex(form.mode.findData("adaptive"))
    done = send_and_wait(qtbot, loaded, "a reply the stop-loss ended")
    assert done.stats.mode == "adaptive" and done.verdict is not None and done.verdict.stopped
    assert page.reply_widget is None  # the reply is finished on the page
    footer = page.transcript.messages[-1].footer.text()
    assert footer.count(ls.STOPPED_TEXT) == 1 and ls.PAUSED_TEXT not in footer
    assert ls.STOPPED_TEXT in page.stats_panel.note.text().lower()
    assert page.conversation_id is not None
    stored = page.ctx.store.messages(page.conversation_id)[-1]
    assert stored.role == "assistant" and stored.meta["stats"].get("stopped") is True
    assert footer_text(stored.meta["stats"]).count(ls.STOPPED_TEXT) == 1
