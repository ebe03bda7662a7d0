"""My Models and the settings' extra folders."""

from __future__ import annotations

from PySide6.QtCore import Qt

from specula.core.gguf.model_info import read_model_info
from specula.core.settings import Settings
from specula.gui.models.library_model import COLUMNS, MODEL_ROLE
from specula.gui.models.library_page import LibraryPage
from specula.gui.settings.model_folders import ModelFolders
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
    with qtbot.waitSignal(ctx.load_requested, timeout=30000) as blocker:
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
