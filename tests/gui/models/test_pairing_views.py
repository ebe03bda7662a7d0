"""Every view asks the one pairing decision, and the model pages show what it says plainly.

The chat's draft picker, My Models' "pairs with" and Discover's drafts panel
list the same drafts for the same target; a file in two folders, or the hub
copy of a downloaded file, is listed once; badges judge a draft as a draft.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy

from specula.core.gguf.compat import check
from specula.core.gguf.model_info import read_model_info
from specula.gui.elided import ElidedLabel
from specula.gui.models.discover_page import DiscoverPage
from specula.gui.models.library_model import COLUMNS
from specula.gui.models.library_page import LibraryPage
from specula.gui.models.repo_files_view import FIT_COL, PAIR_COL
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import (
    MEDIUM_REPO,
    SMALL_FILE,
    SMALL_REPO,
    TARGET_FILE,
    TARGET_REPO,
    ZEBRA_REPO,
)
from tests.gui.models.conftest import put_model

MEDIUM_FILE = "tiny-coder-1.5b-instruct-q8_0.gguf"


def _fill_library(ctx, hub_models, tmp_path: Path) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    models = ctx.library.models_dir
    out = {
        "big": put_model(models, TARGET_REPO, hub_models["big"], TARGET_FILE),
        "small": put_model(models, SMALL_REPO, hub_models["small"], SMALL_FILE),
        "medium": put_model(models, MEDIUM_REPO, hub_models["medium"], MEDIUM_FILE),
        "zebra": put_model(models, ZEBRA_REPO, hub_models["zebra"], "zebra-0.5b-q4_k_m.gguf"),
        # the same small draft again, in a folder another app keeps
        "small_twin": put_model(tmp_path / "lmstudio", "lmstudio-community/Tiny", hub_models["small"],
                                SMALL_FILE),
    }
    ctx.settings.extra_model_dirs = [str(tmp_path / "lmstudio")]
    return out


def _rescan(ctx, qtbot) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(ctx.library.scanned, timeout=10000):
        ctx.library.rescan()


def _discover(ctx, qtbot) -> DiscoverPage:  # type: ignore[no-untyped-def]
    page = DiscoverPage(ctx)
    qtbot.addWidget(page)
    page.show()
    return page


def _my_models(ctx, qtbot) -> LibraryPage:  # type: ignore[no-untyped-def]
    page = LibraryPage(ctx)
    qtbot.addWidget(page)
    page.show()
    return page


def _expected_drafts(target: Path, files: list[Path]) -> set[str]:
    """Computed from the headers directly: usable by llama.cpp's rules and fewer parameters."""
    t = read_model_info(target)
    out = set()
    for f in files:
        d = read_model_info(f)
        if (d.parameter_count or 0) < (t.parameter_count or 0) and check(t, d).usable:
            out.add(f.name)
    return out


def test_every_view_lists_the_same_drafts_once(make_window, fake_hub: FakeHub, hub_models,
                                               qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    ctx = w.ctx
    files = _fill_library(ctx, hub_models, tmp_path)
    _rescan(ctx, qtbot)
    expected = _expected_drafts(files["big"], list(files.values()))
    assert expected == {SMALL_FILE, MEDIUM_FILE}

    bar = w.chat.model_bar  # the chat's picker
    with qtbot.waitSignal(bar.drafts_checked, timeout=30000):
        bar.choose_target(str(files["big"]))
    picker = [Path(bar.draft_model.item(r).data(Qt.ItemDataRole.UserRole + 1)).name
              for r in range(1, bar.draft_model.rowCount()) if bar.draft_model.item(r).isEnabled()]

    page = w.findChild(LibraryPage)  # My Models
    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000) as blocker:
        assert page.select_path(str(files["big"]))
    library = [c.name for c in blocker.args[0].drafts]

    discover = w.findChild(DiscoverPage)  # Discover's drafts panel, for the hub copy of the target
    with qtbot.waitSignal(discover.drafts.recommendations_ready, timeout=30000) as blocker:
        discover.open_repo(TARGET_REPO)
        qtbot.waitUntil(lambda: discover.files_model.rows != [], timeout=10000)
        discover.files.selectRow(discover.files_model.row_for(TARGET_FILE))
    found = blocker.args[0]
    panel = [c.name for c in found.local]

    for listed in (picker, library, panel):
        assert sorted(listed) == sorted(expected)  # the same drafts, each once
    # the hub copies of the drafts already in the library are not offered again
    assert not {c.name for c in found.hub} & expected


def test_a_downloaded_hub_draft_says_so_and_offers_load(ctx, fake_hub: FakeHub, hub_models,
                                                        qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _discover(ctx, qtbot)
    with qtbot.waitSignal(page.drafts.recommendations_ready, timeout=30000) as blocker:
        page.open_repo(TARGET_REPO)
    hub_small = f"{SMALL_REPO}/{SMALL_FILE}"
    assert hub_small in [c.source for c in blocker.args[0].hub]
    with qtbot.waitSignal(page.drafts.recommendations_ready, timeout=60000) as blocker:
        page.drafts.buttons[hub_small].click()  # download; the library rescans; listed again
    result = blocker.args[0]
    assert hub_small not in [c.source for c in result.hub]  # listed once...
    local = [c for c in result.local if c.name == SMALL_FILE]
    assert len(local) == 1 and local[0].hub_source == hub_small
    button = page.drafts.buttons[local[0].source]
    assert button.text() == "Load"  # ...as the downloaded copy, with Load, not Download
    item_text = page.drafts.list.itemWidget(page.drafts.list.item(0)).findChild(ElidedLabel).text()
    assert "downloaded" in item_text


def test_a_draft_is_fitted_as_a_draft_and_the_loaded_file_is_not_same_size(
        ctx, fake_hub: FakeHub, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    big = put_model(ctx.library.models_dir, TARGET_REPO, hub_models["big"], TARGET_FILE)
    with qtbot.waitSignal(ctx.engine.target_loaded, timeout=60000):
        ctx.engine.load_target(str(big))
    page = _discover(ctx, qtbot)
    with qtbot.waitSignal(page.headers_read, timeout=30000):
        page.open_repo(SMALL_REPO)
    row = page.files_model.rows[0]
    fit = page.files_model.badge(row, FIT_COL)
    assert fit.text.endswith("as draft")
    assert fit.detail.startswith("As the draft of Tiny-Coder-7B-Instruct")
    with qtbot.waitSignal(page.headers_read, timeout=30000):
        page.open_repo(TARGET_REPO)
    m = page.files_model
    pair = {r.model.filename: m.badge(r, PAIR_COL).text for r in m.rows}
    assert pair[TARGET_FILE] == "loaded target"  # itself, not "same size"
    assert pair["tiny-coder-7b-instruct-q8_0.gguf"] == "✓ same size"  # another file as large


def test_load_as_draft_is_refused_with_the_reason(ctx, hub_models, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _fill_library(ctx, hub_models, tmp_path)
    page = _my_models(ctx, qtbot)
    _rescan(ctx, qtbot)
    with qtbot.waitSignal(ctx.engine.target_loaded, timeout=60000):
        ctx.engine.load_target(str(files["big"]))
    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000):
        page.select_path(str(files["zebra"]))
    assert not page.details.load_draft.isEnabled()
    assert page.details.load_draft.toolTip().startswith("Cannot draft for Tiny-Coder-7B-Instruct")
    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000):
        page.select_path(str(files["small"]))
    assert page.details.load_draft.isEnabled()


def test_library_rows_are_readable(ctx, hub_models, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _fill_library(ctx, hub_models, tmp_path)
    page = _my_models(ctx, qtbot)
    _rescan(ctx, qtbot)
    names = [page.proxy.index(r, 0).data() for r in range(page.proxy.rowCount())]
    twins = [n for n in names if n.startswith(SMALL_FILE)]
    assert len(twins) == 2 and twins[0] != twins[1]  # the folder tells the copies apart
    assert {files["small"].parent.name, files["small_twin"].parent.name} == {
        t.split("— ")[1].rstrip("/") for t in twins}
    col = COLUMNS.index("Tokenizer")
    assert all("·" in page.proxy.index(r, col).data() for r in range(page.proxy.rowCount()))
    assert "5 models" in page.summary.text() and "2 folders" in page.summary.text()
    for path in list(files.values())[1:]:
        ctx.library.library()  # (the library object is rebuilt from settings each time)
        path.unlink()
    _rescan(ctx, qtbot)
    assert page.summary.text().split(" · ")[0].strip() == "1 model"
    pairs = page.details.pairs
    assert pairs.wordWrap() and pairs.textElideMode() == Qt.TextElideMode.ElideNone


def test_long_names_never_widen_a_pane(qtbot) -> None:  # type: ignore[no-untyped-def]
    name = "Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    label = ElidedLabel(name)
    qtbot.addWidget(label)
    assert label.toolTip() == name  # the full name on hover
    # a layout never widens for it: its width is ignored, its minimum is a few characters
    assert label.sizePolicy().horizontalPolicy() == QSizePolicy.Policy.Ignored
    assert label.minimumSizeHint().width() < label.fontMetrics().horizontalAdvance(name) // 4


def test_discover_suggests_pairs_before_any_search(ctx, fake_hub: FakeHub, hub_models, qtbot,
                                                   tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _fill_library(ctx, hub_models, tmp_path)
    _rescan(ctx, qtbot)
    page = DiscoverPage(ctx)
    qtbot.addWidget(page)
    with qtbot.waitSignal(page.suggestions.suggestions_ready, timeout=60000) as blocker:
        page.show()  # the first view, nothing typed
    assert page.search.text() == "" and page.suggestions.isVisible() and not page.results.isVisible()
    pairs = blocker.args[0].pairs
    library = [p for p in pairs if p.why == "in your library"]
    hub = [p for p in pairs if p.why == "popular on the hub"]
    assert library and library[0].target.source == str(files["big"])
    assert Path(library[0].draft.source).name in _expected_drafts(files["big"],
                                                                  list(files.values()))
    assert hub and hub[0].target.source.startswith(TARGET_REPO)
    button = page.suggestions.buttons[pairs.index(library[0])]
    assert button.text() == "Load pair"
    loads: list[list[str]] = []
    ctx.load_requested.connect(lambda kind, path: loads.append([kind, path]))
    button.click()
    assert loads == [["target", library[0].target.source], ["draft", library[0].draft.source]]
    page.search.setText("zebra")
    page.run_search()
    assert not page.suggestions.isVisible() and page.results.isVisible()


def test_a_hub_file_already_in_a_library_folder_is_not_offered_again(
        ctx, fake_hub: FakeHub, hub_models, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _fill_library(ctx, hub_models, tmp_path)  # SMALL_FILE is also in the extra folder
    (ctx.library.models_dir / SMALL_REPO / SMALL_FILE).unlink()  # only the extra copy is left
    _rescan(ctx, qtbot)
    page = _discover(ctx, qtbot)
    with qtbot.waitSignal(page.files_listed, timeout=10000):
        page.open_repo(SMALL_REPO)
    page.files.selectRow(0)
    assert page.files_model.rows[0].local and not page.download_button.isEnabled()
    assert "Already in the library" in page.download_hint.text()


def test_pane_rows_are_as_tall_as_their_contents(qtbot) -> None:  # type: ignore[no-untyped-def]
    from specula.gui.models.widgets import SidePane

    pane = SidePane("TITLE", "status", "List")
    qtbot.addWidget(pane)
    pane.resize(400, 300)
    pane.show()  # rows added while the pane is visible
    row, lay = pane.add_row("data")
    label = ElidedLabel("a row's text", row)
    lay.addWidget(label)
    pane.show_rows()
    item = pane.list.item(0)
    assert pane.list.itemWidget(item) is row and label.isVisibleTo(pane)
    assert pane.list.visualItemRect(item).height() >= label.sizeHint().height()


def test_a_rows_sentence_wraps_and_the_row_follows_the_panes_width(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A suggestion's detail is a sentence: in a narrow pane it takes two lines and the row
    grows to show them; in a wide pane it is one line again (before: cut in the middle)."""
    from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout

    from specula.gui.models.widgets import SidePane

    text = "the loaded target's best draft · 1.2 GB together"
    pane = SidePane("TITLE", "status", "List")
    qtbot.addWidget(pane)
    pane.resize(700, 300)
    pane.show()
    row, lay = pane.add_row("data")
    col = QVBoxLayout()
    col.addWidget(ElidedLabel("Qwen2.5-Coder-7B-Instruct + Qwen2.5-Coder-0.5B-Instruct", row))
    detail = QLabel(text, row)
    detail.setWordWrap(True)
    col.addWidget(detail)
    lay.addLayout(col, 1)
    lay.addWidget(QPushButton("Load pair", row))
    pane.show_rows()
    item = pane.list.item(0)

    def shown_whole() -> bool:
        return detail.height() >= detail.heightForWidth(detail.width())

    qtbot.waitUntil(shown_whole, timeout=60000)
    wide = pane.list.visualItemRect(item).height()
    pane.resize(260, 300)
    qtbot.waitUntil(lambda: pane.list.visualItemRect(item).height() > wide, timeout=60000)
    line = detail.fontMetrics().lineSpacing()
    assert detail.heightForWidth(detail.width()) >= 2 * line  # it did wrap
    qtbot.waitUntil(shown_whole, timeout=60000)
    pane.resize(700, 300)
    qtbot.waitUntil(lambda: pane.list.visualItemRect(item).height() == wide, timeout=60000)
