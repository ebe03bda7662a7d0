"""Pairing and fit said the same way in every view (issue 45, item 6): Load defaults' "Draft
to pair", My Models' list and details, and the chat's draft picker all mark an incompatible
draft (with why) and one larger than the target; My Models' details show the memory
estimate the chat's ⚙ shows."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItemModel

from specula.core.gguf.model_info import read_model_info
from specula.core.hardware import fit
from specula.core.pairing.badges import detected_gpu_free
from specula.gui.chat.draft_list import check_drafts
from specula.gui.models.library_model import COLUMNS
from specula.gui.models.load_defaults_dialog import LoadDefaultsDialog
from tests.gui.models.test_pairing_views import _fill_library, _my_models, _rescan

WHY_ZEBRA = "The two models use different kinds of tokenizer"  # llama vs gpt2 (fixture)


def _row_of(combo, name: str) -> int:  # type: ignore[no-untyped-def]
    return next(i for i in range(combo.count()) if combo.itemText(i).startswith(name))


def test_load_defaults_marks_each_draft_as_the_chat_picker_does(ctx, hub_models, qtbot,
                                                                  tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _fill_library(ctx, hub_models, tmp_path)
    _rescan(ctx, qtbot)
    medium = ctx.library.find(str(files["medium"]))
    dialog = LoadDefaultsDialog(medium, ctx.library.models)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.drafts_judged, timeout=30000):
        pass
    combo = dialog.draft
    items = combo.model()
    assert isinstance(items, QStandardItemModel)
    zebra = _row_of(combo, files["zebra"].name)
    assert combo.itemText(zebra).startswith(
        f"{files['zebra'].name}  — incompatible: {WHY_ZEBRA}")
    assert not items.item(zebra).isEnabled()
    big = _row_of(combo, files["big"].name)  # the 7B: larger than the 1.5B target
    assert combo.itemText(big) == f"{files['big'].name}  — larger than the target"
    assert not items.item(big).isEnabled()
    small = _row_of(combo, files["small"].name)
    assert combo.itemText(small) == files["small"].name and items.item(small).isEnabled()

    # The chat's picker says the same about the same file for the same target.
    entries = check_drafts(str(files["medium"]), [], ctx.library.models)
    [z] = [e for e in entries if Path(e.path).name == files["zebra"].name]
    assert z.short.startswith(WHY_ZEBRA)


def test_my_models_marks_the_list_and_shows_why_and_the_fit(ctx, hub_models, qtbot,
                                                            tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _fill_library(ctx, hub_models, tmp_path)
    page = _my_models(ctx, qtbot)
    _rescan(ctx, qtbot)
    with qtbot.waitSignal(page.pairing_shown, timeout=60000):
        ctx.engine.load_target(str(files["medium"]))
    col = COLUMNS.index("With target")

    def mark(name: str, role: Qt.ItemDataRole = Qt.ItemDataRole.DisplayRole) -> str:
        for r in range(page.proxy.rowCount()):
            if page.proxy.index(r, 0).data().startswith(name):
                return str(page.proxy.index(r, col).data(role))
        raise AssertionError(name)

    assert mark(files["zebra"].name) == "✗ incompatible"
    assert WHY_ZEBRA in mark(files["zebra"].name, Qt.ItemDataRole.ToolTipRole)
    assert mark(files["big"].name) == "larger than the target"
    assert mark(files["small"].name) == "✓ draft for it"

    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000):
        page.select_path(str(files["zebra"]))
    tip = page.details.load_draft.toolTip()
    assert not page.details.load_draft.isEnabled() and ".;" not in tip
    assert page.details.pairing.text() == f"✗ {tip}"
    # The memory estimate, as the chat's ⚙ computes it (the same core function).
    size = ctx.library.find(str(files["zebra"])).size
    est = fit.estimate(read_model_info(files["zebra"]), None, n_ctx=ctx.settings.n_ctx,
                       target_weights=size, gpu_free=detected_gpu_free())
    assert est.message in page.details.fit.text()

    with qtbot.waitSignal(page.details.pairs_ready, timeout=30000):
        page.select_path(str(files["small"]))
    assert "As the draft of Tiny-Coder-1.5B-Instruct" in page.details.fit.text()
    assert page.details.pairing.text().startswith("✓ Can draft for Tiny-Coder-1.5B-Instruct")
