"""Discover against the fake hub: search, cancel by typing, files with badges, errors, drafts."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from specula.core.pairing.badges import Tone
from specula.gui.models.discover_page import DiscoverPage
from specula.gui.models.repo_files_view import FIT_COL, PAIR_COL
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, TARGET_FILE, TARGET_REPO, ZEBRA_REPO


def _page(ctx, qtbot) -> DiscoverPage:  # type: ignore[no-untyped-def]
    page = DiscoverPage(ctx)
    qtbot.addWidget(page)
    page.show()
    return page


def _open(page: DiscoverPage, qtbot, repo: str) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(page.headers_read, timeout=30000):
        page.open_repo(repo)


def _badges(page: DiscoverPage) -> dict[str, tuple[str, str]]:
    m = page.files_model
    return {r.model.filename: (m.badge(r, FIT_COL).text, m.badge(r, PAIR_COL).text)
            for r in m.rows}


def test_search_and_typing_again_cancels(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    page.search.setText("tiny-coder")
    page.run_search()
    first = page._search_task
    page.search.setText("zebra")  # typing again cancels the search in flight
    assert first is not None and first.cancelled
    with qtbot.waitSignal(page.search_finished, timeout=10000) as blocker:
        pass
    assert blocker.args == [1]
    assert [r.repo_id for r in page.results_model.results] == [ZEBRA_REPO]
    page.search.setText("tiny-coder")
    with qtbot.waitSignal(page.search_finished, timeout=10000):
        pass
    repos = [r.repo_id for r in page.results_model.results]
    assert repos[0] == TARGET_REPO and SMALL_REPO in repos  # most downloaded first
    assert page.results_model.data(page.results_model.index(0, 1)) == "1.0k"


def test_files_grouped_with_badges_and_header_cache(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    with qtbot.waitSignal(page.files_listed, timeout=10000):
        page.open_repo(TARGET_REPO)
    model = page.files_model
    assert model.busy_count() == len(model.rows) == 3  # spinners while the headers are read
    assert model.badge(model.rows[0], FIT_COL).tone is Tone.BUSY
    assert model.data(model.index(0, 2)) == "F16"  # from the name until the header is read
    qtbot.waitUntil(lambda: model.busy_count() == 0, timeout=30000)
    assert "Tiny Coder 7B Instruct" in page.description.text()
    labels = [r.label() for r in model.rows]
    assert any("[3 parts]" in lbl for lbl in labels), labels  # split parts are one row
    badges = _badges(page)
    fit, pair = badges[TARGET_FILE]
    assert fit in ("fits on GPU", "CPU only", "partially offloaded")
    assert pair == "no target loaded"
    assert model.data(model.index(0, 2)) == "F32"  # what the header says (tiny models are F32)
    reads = len(fake_hub.requests_to(f"/cdn/{TARGET_REPO}/"))  # (drafts read other repos)
    _open(page, qtbot, TARGET_REPO)  # the second look reads no header again
    assert len(fake_hub.requests_to(f"/cdn/{TARGET_REPO}/")) == reads


def test_compatibility_with_the_loaded_target(ctx, fake_hub: FakeHub, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    with qtbot.waitSignal(ctx.engine.target_loaded, timeout=60000):
        ctx.engine.load_target(str(hub_models["big"]))
    _open(page, qtbot, SMALL_REPO)
    assert _badges(page)[SMALL_FILE][1] == "✓ draft for it"
    tip = page.files_model.headerData(PAIR_COL, Qt.Orientation.Horizontal,
                                      Qt.ItemDataRole.ToolTipRole)
    assert tip == "Compatibility with Tiny-Coder-7B-Instruct, the loaded target"
    assert "against Tiny-Coder-7B-Instruct (loaded target)" in page.files_status.text()
    _open(page, qtbot, ZEBRA_REPO)
    (_fit, pair), = _badges(page).values()
    assert pair == "incompatible"
    row = page.files_model.rows[0]
    assert "differ" in page.files_model.badge(row, PAIR_COL).detail.lower()


def test_fit_follows_the_context_length(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    _open(page, qtbot, SMALL_REPO)
    before = page.files_model.badge(page.files_model.rows[0], FIT_COL).detail
    with qtbot.waitSignal(page.headers_read, timeout=10000):
        page.n_ctx.setValue(8192)
    after = page.files_model.badge(page.files_model.rows[0], FIT_COL).detail
    assert "At 8192 tokens" in after and after != before


def test_errors_are_shown_where_they_happen(ctx, fake_hub: FakeHub, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    page.open_repo("specula-test/no-such-repo")
    qtbot.waitUntil(lambda: "not found" in page.files_status.text(), timeout=10000)
    assert page.files_status.objectName() == "ErrorLabel"
    page.open_repo("specula-test/Private-GGUF")
    qtbot.waitUntil(lambda: "needs access" in page.files_status.text(), timeout=10000)
    fake_hub.status_for[f"/{SMALL_REPO}/resolve/"] = 500  # header reads fail, listing works
    _open(page, qtbot, SMALL_REPO)
    fit, pair = _badges(page)[SMALL_FILE]
    assert fit == pair == "header unreadable"
    assert "try again later" in page.files_model.badge(page.files_model.rows[0], FIT_COL).detail
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: offline
    page.search.setText("qwen")
    page.run_search()
    qtbot.waitUntil(lambda: "cannot reach" in page.search_status.text(), timeout=15000)
    assert page.search_status.objectName() == "ErrorLabel"


def test_drafts_panel_recommends_hub_drafts(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    with qtbot.waitSignal(page.drafts.recommendations_ready, timeout=30000) as blocker:
        page.open_repo(TARGET_REPO)
    result = blocker.args[0]
    assert result.local == []  # nothing downloaded yet
    sources = [c.source for c in result.hub]
    assert sources and sources[0].startswith(SMALL_REPO + "/")
    assert all(not s.startswith("other-org/") for s in sources)  # the Zebra tokenizer differs
    button = page.drafts.buttons[sources[0]]
    with qtbot.waitSignal(ctx.downloads.download_finished, timeout=30000) as done:
        button.click()  # one click
    assert done.args[:2] == [SMALL_REPO, SMALL_FILE] and Path(done.args[2]).is_file()
