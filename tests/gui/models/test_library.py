"""My Models, the settings' extra folders, and the chat's library pickers and draft offer."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from specula.core.gguf.model_info import read_model_info
from specula.core.settings import Settings
from specula.gui.models.library_model import COLUMNS, MODEL_ROLE
from specula.gui.models.library_page import LibraryPage
from specula.gui.settings.model_folders import ModelFolders
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, TARGET_FILE, TARGET_REPO
from tests.gui.models.conftest import put_model


def _library(ctx, qtbot, hub_models) -> LibraryPage:  # type: ignore[no-untyped-def]
    models = ctx.library.models_dir
    put_model(models, TARGET_REPO, hub_models["big"], TARGET_FILE)
    put_model(models, SMALL_REPO, hub_models["small"], SMALL_FILE)
    put_model(models, "other-org/Zebra-GGUF", hub_models["zebra"], "zebra-0.5b-q4_k_m.gguf")
    page = LibraryPage(ctx)
    qtbot.addWidget(page)
    page.show()
    with qtbot.waitSignal(page.library_shown, timeout=10000):
        ctx.library.rescan()
    return page


def _names(page: LibraryPage) -> list[str]:
    return [page.proxy.index(r, 0).data() for r in range(page.proxy.rowCount())]


def test_table_filter_sort_and_pairs(ctx, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _library(ctx, qtbot, hub_models)
    assert page.proxy.columnCount() == len(COLUMNS) and len(_names(page)) == 3
    page.filter.setText("ZEBRA")
    assert _names(page) == ["zebra-0.5b-q4_k_m.gguf"]
    page.filter.setText("")
    page.table.sortByColumn(COLUMNS.index("Size"), Qt.SortOrder.DescendingOrder)
    assert _names(page)[0] == TARGET_FILE  # the biggest file first, sorted as a number
    row = page.proxy.index(0, COLUMNS.index("Tokenizer")).data()
    info = read_model_info(hub_models["big"])
    assert row == f"{info.tokenizer_model} · {info.vocab_size:,}"  # readable: type and vocab
    assert (info.tokenizer_fingerprint or "")[:6] not in row
    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000) as blocker:
        page.select_path(str(ctx.library.models_dir / TARGET_REPO / TARGET_FILE))
    pairs = blocker.args[0]
    assert [p.name for p in pairs.drafts] == [SMALL_FILE] and pairs.targets == []
    assert "Fingerprint" in page.details.meta.text()
    assert "Draft for it" in page.details.pairs.item(0).text()
    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000) as blocker:
        page.select_path(str(ctx.library.models_dir / SMALL_REPO / SMALL_FILE))
    assert [p.name for p in blocker.args[0].targets] == [TARGET_FILE]


def test_load_remove_and_reveal(ctx, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _library(ctx, qtbot, hub_models)
    small = ctx.library.models_dir / SMALL_REPO / SMALL_FILE
    page.select_path(str(small))
    with qtbot.waitSignal(ctx.load_requested, timeout=1000) as blocker:
        page.details.load_draft.click()
    assert blocker.args == ["draft", str(small)]
    opened: list[str] = []
    page.open_url = lambda url: opened.append(url.toLocalFile())
    page.details.reveal.click()
    assert opened == [str(small.parent)]
    asked: list[str] = []
    page.confirm = lambda _w, _t, text: asked.append(text) or False  # "No"
    page.details.remove.click()
    assert asked and SMALL_FILE in asked[0] and small.exists()
    page.confirm = lambda _w, _t, _text: True
    with qtbot.waitSignal(ctx.library.scanned, timeout=10000):
        page.details.remove.click()
    assert not small.exists() and SMALL_FILE not in _names(page)


def test_extra_folder_is_indexed_in_place(ctx, hub_models, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    page = _library(ctx, qtbot, hub_models)
    outside = tmp_path / "lmstudio" / "models"
    elsewhere = put_model(outside, "lmstudio-community/Tiny-GGUF", hub_models["medium"], "m.gguf")
    folders = ModelFolders(ctx)
    qtbot.addWidget(folders)
    folders.pick_folder = lambda _w, _t: str(outside)
    with qtbot.waitSignal(page.library_shown, timeout=10000):
        folders.add_button.click()
    assert Settings.load().extra_model_dirs == [str(outside)]
    assert "m.gguf" in _names(page)
    assert not list(ctx.library.models_dir.rglob("m.gguf"))  # nothing copied
    page.select_path(str(elsewhere))
    assert not page.details.remove.isEnabled() and page.details.load_target.isEnabled()
    model = page.table.currentIndex().data(MODEL_ROLE)
    assert model.repo_id == "lmstudio-community/Tiny-GGUF" and not model.managed


def test_chat_pickers_use_the_library(make_window, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    models = w.ctx.library.models_dir
    big = put_model(models, TARGET_REPO, hub_models["big"], TARGET_FILE)
    small = put_model(models, SMALL_REPO, hub_models["small"], SMALL_FILE)
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=10000):
        w.ctx.library.rescan()
    bar = w.chat.model_bar
    paths = [bar.target_combo.itemData(i, Qt.ItemDataRole.UserRole + 1)
             for i in range(bar.target_combo.count())]
    assert str(big) in paths and str(small) in paths
    with qtbot.waitSignal(bar.drafts_checked, timeout=30000):
        bar.choose_target(str(big))
    entry = bar.draft_entry(str(small))
    assert entry is not None and entry.isEnabled()  # a smaller library model, compatible
    assert bar.draft_entry(str(big)) is None and bar.offer.isHidden()


def test_offer_when_no_compatible_draft(make_window, fake_hub: FakeHub, hub_models, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    bar = w.chat.model_bar
    with qtbot.waitSignal(bar.offer.offer_shown, timeout=30000) as blocker:
        bar.choose_target(str(hub_models["big"]))
    offer = blocker.args[0]
    assert offer.repo_id == SMALL_REPO and offer.filename == SMALL_FILE
    size = hub_models["small"].stat().st_size
    assert bar.offer.label.text() == (f"No compatible draft in the library. Download "
                                      f"Tiny-Coder-0.5B-Instruct ({round(size / 1000)} kB) as a draft?")
    assert bar.offer.isVisibleTo(bar)
    with qtbot.waitSignal(w.ctx.engine.draft_loaded, timeout=60000):
        bar.offer.accept.click()
    assert Path(w.ctx.engine.draft_info.source).name == SMALL_FILE
    assert bar.offer.isHidden()
