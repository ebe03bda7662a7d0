"""The compare page: draft off then on, speedup and identity."""

from __future__ import annotations

from specula.gui.compare.page import first_difference


def test_compare_reports_speedup_and_identity(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    loaded.ctx.settings.generation.max_tokens = 40
    page = loaded.show_page("compare")
    assert "tiny-draft" in page.models.text()
    page.prompt.setPlainText("def hello world")
    with qtbot.waitSignal(page.compared, timeout=120000) as blocker:
        page.run_button.click()
    banner = blocker.args[0]
    plain, spec = page.results["plain"], page.results["spec"]
    assert plain.stats.mode == "plain" and spec.stats.mode == "chain"
    assert spec.stats.accepted > 0
    expected = spec.stats.tokens_per_s / plain.stats.tokens_per_s
    assert f"Speedup {expected:.2f}×" in banner
    assert plain.text == spec.text and "texts identical" in banner  # greedy is exact
    assert page.banner.text() == banner
    assert "draft tokens accepted" in page.spec.footer.text()
    assert "draft tokens accepted" not in page.plain.footer.text()
    assert page.plain.text == plain.text


def test_first_difference() -> None:
    assert first_difference("abc", "abc") == -1
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2
