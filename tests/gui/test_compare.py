"""The compare page: knows what is loaded, interleaves runs, unrounded speedup, identity."""

from __future__ import annotations

from specula.core.compare import significant
from specula.core.engine.config import Mode
from specula.gui import theme
from specula.gui.compare.page import IDENTITY_NOTE


def spy_modes(page):  # type: ignore[no-untyped-def]
    """Record the mode of every reply the page asks the engine for, in order."""
    modes: list[str] = []
    real = page.client.generate

    def generate(messages, sampling, spec):  # type: ignore[no-untyped-def]
        modes.append(spec.mode.value)
        return real(messages, sampling, spec)

    page.client.generate = generate
    return modes


def run_and_wait(page, qtbot, prompt: str = "def hello world"):  # type: ignore[no-untyped-def]
    page.prompt.setPlainText(prompt)
    with qtbot.waitSignal(page.compared, timeout=120000) as blocker:
        page.run_button.click()
    return blocker.args[0]


def test_compare_knows_what_is_loaded(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.show_page("compare")
    assert "Load a target and a draft" in page.banner.text()
    assert not page.run_button.isEnabled()
    w.ctx.engine.load_target(str(tiny["target"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_target and not w.ctx.engine.is_loading("target"), timeout=60000)
    assert "Load a draft" in page.banner.text() and not page.run_button.isEnabled()
    w.ctx.engine.load_draft(str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    assert "Load a target" not in page.banner.text() and "Ready" in page.banner.text()
    assert page.run_button.isEnabled()
    assert "tiny-draft" in page.models.text()


def test_runs_interleave_and_speedup_is_unrounded(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.show_page("compare")
    assert page.options.linked.isChecked() and page.options.max_tokens.value() == 40
    page.options.rounds.setValue(2)
    modes = spy_modes(page)
    dones = []
    real_finished = page._finished
    page._finished = lambda side, done: (dones.append((side, done)), real_finished(side, done))
    banner = run_and_wait(page, qtbot)
    assert modes == ["plain", "chain", "chain", "plain"]  # ABBA: drift weighs both alike
    plain = [d for s, d in dones if s.value == "plain"]
    spec = [d for s, d in dones if s.value == "spec"]
    assert all(d.stats.mode == "plain" for d in plain) and all(d.stats.mode == "chain" for d in spec)
    assert all(d.stats.tokens <= 40 for _s, d in dones)  # the chat panel's max tokens
    assert sum(d.stats.accepted for d in spec) > 0

    def pooled(ds):  # type: ignore[no-untyped-def]
        return sum(d.stats.tokens - 1 for d in ds) / sum(d.stats.decode_s for d in ds)

    expected = pooled(spec) / pooled(plain)
    assert f"Speedup {significant(expected, 3)}×" in banner
    assert f"{significant(pooled(spec), 3)} vs {significant(pooled(plain), 3)} tok/s" in banner
    assert "2 rounds" in banner
    assert all(d.text == plain[0].text for _s, d in dones)
    assert "texts identical" in banner  # greedy is exact
    assert page.banner.text() == banner
    assert "draft tokens accepted" in page.spec.footer.text()
    assert "draft tokens accepted" not in page.plain.footer.text()
    assert page.plain.text == plain[0].text
    # coloured like the chat: accepted draft tokens carry the draft background
    assert theme.palette().draft_bg.lower() in page.spec.body.toHtml().lower()
    assert theme.palette().draft_bg.lower() not in page.plain.body.toHtml().lower()


def test_own_settings_when_unlinked(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.show_page("compare")
    page.options.linked.setChecked(False)
    assert page.options.max_tokens.isEnabled()
    page.options.max_tokens.setValue(6)
    page.options.rounds.setValue(1)
    page.options.mode.setCurrentIndex(page.options.mode.findData(Mode.LOOKUP.value))
    modes = spy_modes(page)
    run_and_wait(page, qtbot)
    assert modes == ["plain", "lookup"]
    assert page.results["plain"].stats.tokens <= 6 and page.results["spec"].stats.tokens <= 6
    assert "6 tokens" in page.plain.footer.text() or page.results["plain"].stats.tokens < 6
    page.options.refresh()  # stays the page's own
    assert page.options.max_tokens.value() == 6


def test_stop_ends_the_comparison(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.show_page("compare")
    page.options.rounds.setValue(3)
    modes: list[str] = []
    real = page.client.generate

    def generate(messages, sampling, spec):  # type: ignore[no-untyped-def]
        modes.append(spec.mode.value)
        reply = real(messages, sampling, spec)
        reply.batch_arrived.connect(page.stop)  # Stop while the first run streams
        return reply

    page.client.generate = generate
    page.prompt.setPlainText("def hello world")
    with qtbot.waitSignal(page.compared, timeout=120000) as blocker:
        page.run_button.click()
    assert modes == ["plain"]  # no further run started after Stop
    assert "of 6 runs" in blocker.args[0] and not page.stop_button.isEnabled()
    qtbot.waitUntil(lambda: not loaded.ctx.engine.busy, timeout=60000)
    assert page.run_button.isEnabled()


def test_panes_take_the_height(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    loaded.resize(1024, 700)
    page = loaded.show_page("compare")
    qtbot.waitUntil(lambda: page.spec.body.height() > 0)
    assert page.spec.body.height() > 250 and page.plain.body.height() > 250
    assert page.minimumSizeHint().width() <= 1024 - loaded.nav.width()  # never widens the window


def test_seeded_sampling_says_whether_texts_must_match(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.show_page("compare")
    page.options.linked.setChecked(False)
    page.options.temperature.setValue(0.8)
    page.options.seed.setValue(7)
    page.options.rounds.setValue(1)
    banner = run_and_wait(page, qtbot)
    plain, spec = page.results["plain"], page.results["spec"]
    assert plain.stats.acceptance_rule != "greedy"
    assert IDENTITY_NOTE in page.note.text()
    assert banner.endswith("seed 7")  # enough to repeat the comparison
    if spec.stats.acceptance_rule == "coupled":  # the seed alone fixes the text
        assert plain.text == spec.text and "texts identical" in banner
    elif plain.text != spec.text:
        assert "expected" in banner and "please report" not in banner


def test_copy_link_copies_that_code_block(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QGuiApplication

    from specula.gui.compare.column import Column

    col = Column("x")
    qtbot.addWidget(col)
    col.text = "Two:\n```python\nprint(1)\n```\nand\n```\nls -l\n```\n"
    col._on_link(QUrl("copy:1"))
    assert QGuiApplication.clipboard().text() == "ls -l\n"
    col._on_link(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == "print(1)\n"
