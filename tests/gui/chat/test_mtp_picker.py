"""The draft picker offers a target's own MTP layers first, with the same switch and colours."""

from __future__ import annotations

from pathlib import Path

from specula.gui.chat.draft_list import BUILTIN_MTP
from specula.gui.chat.model_pickers import PATH_ROLE
from tests.gui.conftest import send_and_wait


def _rows(bar) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    m = bar.draft_model
    return [(m.item(r).text(), m.item(r).data(PATH_ROLE)) for r in range(m.rowCount())]


def test_builtin_mtp_draft_first_with_switch_and_colours(make_window, families: dict[str, Path],
                                                         qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(families["qwen35-mtp"]))
    bar, engine = w.chat.model_bar, w.ctx.engine
    qtbot.waitUntil(lambda: engine.has_target and bar.draft_model.rowCount() > 1, timeout=60000)
    assert engine.mtp_layers == 1
    assert _rows(bar)[:2] == [("Built-in (MTP, 1 layer)", BUILTIN_MTP), ("No draft", "")]
    assert bar.draft_combo.currentIndex() == 0  # chosen: speculation needs no download
    assert bar.speculating and bar.draft_switch.text() == "Speculative: on (built-in MTP)"
    assert "Built-in (MTP, 1 layer)" in bar.status.text()
    # the instant switch: off and on, nothing is loaded again
    bar.draft_switch.setChecked(False)
    assert not bar.speculating
    bar.draft_switch.setChecked(True)
    assert bar.speculating
    # "No draft": nothing to speculate with
    bar.draft_combo.activated.emit(1)
    assert not engine.has_builtin_draft and not bar.speculating
    bar.draft_combo.activated.emit(0)
    assert engine.has_builtin_draft and bar.speculating
    # a reply drafts with the head; its accepted tokens are coloured as drafted
    w.chat.settings_panel.max_tokens.setValue(40)
    form = w.chat.settings_panel.spec
    form.mode.setCurrentIndex(form.mode.findData("mtp"))
    done = send_and_wait(qtbot, w, "hello world the model")
    assert done.stats.mode == "mtp" and done.stats.drafted > 0 and done.stats.accepted > 0
    reply = w.chat.transcript.messages[-1]
    assert any(src == "d" for _t, src, _p in reply.tokens)
    # Compare can run with the built-in draft alone
    assert w.pages["compare"].readiness() == ""


def test_no_builtin_entry_without_nextn(make_window, families: dict[str, Path],
                                        qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(families["qwen35"]))
    bar, engine = w.chat.model_bar, w.ctx.engine
    qtbot.waitUntil(lambda: engine.has_target and bar.draft_model.rowCount() >= 1, timeout=60000)
    qtbot.wait(200)
    assert engine.mtp_layers == 0
    assert all(path != BUILTIN_MTP for _t, path in _rows(bar))
    assert not bar.speculating and bar.draft_switch.text() == "Speculative: off (no draft)"
