"""The draft picker offers the library's draft heads that fit the loaded target beside the
draft models; choosing one loads it in the background and picks its mode; the live panel,
the footer and Compare speak of the head."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from specula.gui.chat.model_pickers import PATH_ROLE
from specula.gui.stats.footer import footer_text
from specula_tools.tiny_heads import build_head, spec_for
from tests.gui.conftest import send_and_wait

TINY_LAYERS = 2  # the tiny llama target's layers (specula_tools.tiny_models.TARGET)


def _rows(bar) -> list[tuple[str, str, bool]]:  # type: ignore[no-untyped-def]
    m = bar.draft_model
    return [(m.item(r).text(), m.item(r).data(PATH_ROLE), m.item(r).isEnabled())
            for r in range(m.rowCount())]


def _library_with_heads(w, qtbot) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """A fitting EAGLE-3 head and a DFlash head reading a layer the target lacks, in the
    library (as a download would leave them)."""
    heads = Path(w.ctx.library.models_dir) / "someone" / "tiny-heads"
    fits = build_head(heads / "tiny-llama-eagle3.gguf", spec_for("eagle3", TINY_LAYERS))
    beyond = build_head(heads / "tiny-llama-dflash-far.gguf",
                        spec_for("dflash", TINY_LAYERS, layer_ids=(0, TINY_LAYERS + 3)))
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=30000):
        w.ctx.library.rescan()
    return fits, beyond


def test_picker_offers_fitting_heads_and_switches_to_them(make_window, tiny: dict[str, Path],
                                                          qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]))
    bar, engine = w.chat.model_bar, w.ctx.engine
    qtbot.waitUntil(lambda: engine.has_target, timeout=60000)
    compare = w.pages["compare"].options
    assert compare.mode.findData("eagle3") < 0  # no head loaded: Compare cannot run its mode
    fits, beyond = _library_with_heads(w, qtbot)
    qtbot.waitUntil(lambda: bar.draft_entry(str(fits)) is not None
                    and bar.draft_entry(str(beyond)) is not None, timeout=60000)
    rows = {path: (text, enabled) for text, path, enabled in _rows(bar)}
    # a head is no target
    targets = [bar.target_combo.itemData(i, Qt.ItemDataRole.UserRole + 1)
               for i in range(bar.target_combo.count())]
    assert str(fits) not in targets and str(beyond) not in targets
    assert rows[str(fits)] == ("EAGLE-3 head  (tiny-llama-eagle3.gguf)", True)
    text, enabled = rows[str(beyond)]
    assert not enabled and text.startswith("DFlash head  (tiny-llama-dflash-far.gguf)  — incompatible")
    assert f"layer {TINY_LAYERS + 3}" in text  # says which layer the target lacks
    # choosing the head loads it on the engine thread and picks its mode
    row = [p for _t, p, _e in _rows(bar)].index(str(fits))
    bar.draft_combo.activated.emit(row)
    qtbot.waitUntil(lambda: engine.has_head, timeout=60000)
    assert engine.head_info.kind == "eagle3" and not engine.has_draft
    form = w.chat.settings_panel.spec
    qtbot.waitUntil(lambda: form.mode.currentData() == "eagle3", timeout=10000)
    assert bar.draft_combo.currentIndex() == row
    assert bar.speculating and bar.draft_switch.text() == "Speculative: on (EAGLE-3 head)"
    assert "Draft: EAGLE-3 head (tiny-llama-eagle3.gguf)" in bar.status.text()
    assert compare.mode.findData("eagle3") >= 0  # Compare offers the head's mode now
    # the empty chat does not ask for a draft while a head drafts
    qtbot.waitUntil(lambda: "Load a smaller model" not in w.chat.empty.text.text(), timeout=10000)
    # a reply drafts with the head; the panel and the footer count its tokens
    w.chat.settings_panel.max_tokens.setValue(40)
    done = send_and_wait(qtbot, w, "hello world the model")
    s = done.stats
    assert s.mode == "eagle3" and s.drafted > 0
    panel = w.chat.stats_panel
    panel.refresh()
    assert panel.values["mode"].text() == "EAGLE-3 head"
    assert panel.values["drafted"].text() == str(s.drafted)
    assert panel.values["accepted"].text() == str(s.accepted)
    footer = footer_text(s.to_dict())
    assert f"{s.accepted}/{s.drafted} draft tokens accepted" in footer
    assert f"EAGLE-3 head ({s.acceptance_rule})" in footer
    # "No draft": the head goes, its mode with it (it would run plain)
    bar.draft_combo.activated.emit([p for _t, p, _e in _rows(bar)].index(""))
    qtbot.waitUntil(lambda: not engine.has_head, timeout=60000)
    qtbot.waitUntil(lambda: form.mode.currentData() == "chain", timeout=10000)
    assert not bar.speculating and compare.mode.findData("eagle3") < 0


def test_a_misfitting_head_chosen_anyway_is_refused_with_why(make_window, tiny: dict[str, Path],
                                                             qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Open… on a head for another target: nothing loads, the banner says why."""
    w = make_window(str(tiny["target"]))
    bar, engine = w.chat.model_bar, w.ctx.engine
    qtbot.waitUntil(lambda: engine.has_target, timeout=60000)
    other = build_head(tmp_path / "wide-eagle3.gguf",
                       spec_for("eagle3", TINY_LAYERS, target_hidden=128))
    with qtbot.waitSignal(engine.load_failed, timeout=60000) as failed:
        bar.choose_draft(str(other))
    kind, message = failed.args
    assert kind == "draft" and "hidden size 128" in message
    assert not engine.has_head and not engine.has_draft


def test_a_dspark_head_then_a_draft_model_take_each_others_place(make_window, tiny: dict[str, Path],
                                                                  qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]))
    bar, engine = w.chat.model_bar, w.ctx.engine
    qtbot.waitUntil(lambda: engine.has_target, timeout=60000)
    heads = Path(w.ctx.library.models_dir) / "tiny-heads"
    spark = build_head(heads / "tiny-llama-dspark.gguf", spec_for("dspark", TINY_LAYERS))
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=30000):
        w.ctx.library.rescan()
    qtbot.waitUntil(lambda: bar.draft_entry(str(spark)) is not None, timeout=60000)
    bar.draft_combo.activated.emit(bar.draft_entry(str(spark)).row())
    qtbot.waitUntil(lambda: engine.has_head, timeout=60000)
    form, compare = w.chat.settings_panel.spec, w.pages["compare"].options
    qtbot.waitUntil(lambda: form.mode.currentData() == "dspark", timeout=10000)
    assert bar.draft_switch.text() == "Speculative: on (DSpark head)"
    assert compare.mode.findData("dspark") >= 0 and compare.mode.findData("eagle3") < 0
    assert w.ctx.settings.last_draft == str(spark)  # the next start loads it again
    # a draft model takes the head's place, and chain the head's mode
    bar.choose_draft(str(tiny["draft"]))
    qtbot.waitUntil(lambda: engine.has_draft and not engine.has_head, timeout=60000)
    qtbot.waitUntil(lambda: form.mode.currentData() == "chain", timeout=10000)
    assert bar.speculating and bar.draft_switch.text() == "Speculative: on"
    assert "Draft: " in bar.status.text() and "head" not in bar.status.text()
    assert compare.mode.findData("dspark") < 0
