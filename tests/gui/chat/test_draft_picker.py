"""The chat's pickers: library targets, the drafts the pairing decision lists, the hub offer."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, TARGET_FILE, TARGET_REPO
from tests.gui.models.conftest import put_model


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
