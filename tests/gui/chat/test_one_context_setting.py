"""One context setting (issue 45, item 3): the value the model runs with is the one the
chat's gear, My Models, the token counter and the local server's /v1/models show; the
gear's choice becomes the model's own default and wins over the older one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog

from specula.core.gguf.model_info import read_model_info
from specula.core.library.load_defaults import LoadDefaults, defaults_for, save_defaults
from specula.core.library.scan import LocalModel
from specula.core.settings import Settings


def _shown_everywhere(w, target: Path, qtbot) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The context length as each place shows it."""
    from specula.gui.load_options import LoadOptionsDialog

    page = w.chat
    qtbot.waitUntil(lambda: page.meter.ready, timeout=30000)
    page.context.show()
    counter = int(page.context_bar.tokens.text().split("/")[-1].split()[0].replace(",", ""))
    e = w.ctx.engine
    gear = LoadOptionsDialog(w.ctx, e.target_info, e.draft_info, w, str(target))
    qtbot.addWidget(gear)
    models = w.pages["models"]
    info = read_model_info(target)
    model = LocalModel(target, [target], target.stat().st_size, target.parent, None, info)
    words = models._loads_with(model)
    served = w.ctx.server.host.served()
    return {"gear": gear.options.n_ctx.value(), "counter": counter, "meter": page.meter.n_ctx,
            "my_models": int(words.split()[0].replace(",", "")),
            "v1_models": served.n_ctx, "engine": e.n_ctx}


def test_the_context_shown_is_the_one_the_model_runs_with(make_window, tiny, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from specula.gui.load_options import LoadChoice, LoadOptionsDialog

    target = tiny["target"]
    assert Settings.load().n_ctx == 4096  # the global default
    save_defaults(target, LoadDefaults(n_ctx=1024))  # the model's own default
    w = make_window(str(target))
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    assert set(_shown_everywhere(w, target, qtbot).values()) == {1024}

    def accept_with_512(dialog) -> int:  # type: ignore[no-untyped-def]
        c = dialog.options.choice()
        dialog.options.set_choice(LoadChoice(512, c.target_layers, c.draft_layers))
        dialog.accept()
        return int(QDialog.DialogCode.Accepted)

    monkeypatch.setattr(LoadOptionsDialog, "exec", accept_with_512)
    e = w.ctx.engine
    with qtbot.waitSignal(e.target_loaded, timeout=60000):
        w.chat.model_bar.load_gear.click()
    # the explicit choice wins over the older per-model default, and is saved as it
    assert defaults_for(target).n_ctx == 512
    assert set(_shown_everywhere(w, target, qtbot).values()) == {512}
    assert Settings.load().n_ctx == 4096  # models without their own keep the global one
