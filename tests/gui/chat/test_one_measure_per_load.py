"""A reload loads and measures the draft once (issue 45, item 7).

The pair's per-model defaults name the draft to pair, and the gear's reload asks for the
same draft again: one ``load_started`` for the draft and one "Measuring the pair" step.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from specula.core.library.load_defaults import LoadDefaults, save_defaults
from specula.gui.engine_worker import MEASURING_STEP


def test_a_reload_loads_and_measures_the_draft_once(make_window, tiny, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from specula.gui.load_options import LoadChoice, LoadOptionsDialog

    save_defaults(tiny["target"], LoadDefaults(draft=str(tiny["draft"])))  # "Draft to pair"
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    e = w.ctx.engine
    qtbot.waitUntil(lambda: e.has_draft and not e.is_loading("draft"), timeout=60000)

    def accept_with_1024(dialog) -> int:  # type: ignore[no-untyped-def]
        c = dialog.options.choice()
        dialog.options.set_choice(LoadChoice(1024, c.target_layers, c.draft_layers))
        dialog.accept()
        return int(QDialog.DialogCode.Accepted)

    monkeypatch.setattr(LoadOptionsDialog, "exec", accept_with_1024)
    started: list[str] = []
    measured: list[str] = []
    e.load_started.connect(lambda kind, _p: started.append(kind))
    e.load_step.connect(lambda kind, step: measured.append(kind) if step == MEASURING_STEP else None)
    loaded: list[str] = []
    e.draft_loaded.connect(lambda info, _r: loaded.append(info.source))
    w.chat.model_bar.load_gear.click()
    # every load asked for has answered (the per-model defaults' draft request is made
    # on the first turn of the event loop after the target's load started, long before
    # a draft can have loaded)
    qtbot.waitUntil(lambda: bool(loaded) and not e.is_loading("target")
                    and not e.is_loading("draft"), timeout=60000)
    assert started == ["target", "draft"]
    assert measured == ["draft"]
    assert e.n_ctx == 1024 and e.draft_info.source == str(tiny["draft"])
