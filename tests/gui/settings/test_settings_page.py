"""The Settings page: GPU layers default to auto, load options say when they apply, the
server check box is visible in the dark theme, the folder picker opens in the models folder."""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog, QStyle, QStyleOptionButton

from specula.core import gpu_layers
from specula.core.settings import Settings
from specula.gui import theme
from specula.gui.settings.page import APPLY_NOTE, STALE_NOTE


def test_gpu_layers_default_to_auto(make_window) -> None:  # type: ignore[no-untyped-def]
    assert Settings().n_gpu_layers_target == gpu_layers.AUTO == Settings().n_gpu_layers_draft
    w = make_window()
    page = w.show_page("settings")
    assert page.load_options.auto.isChecked() and page.gpu_draft.text() == "auto"
    s = w.ctx.settings
    assert (s.n_gpu_layers_target, s.n_gpu_layers_draft) == (gpu_layers.AUTO, gpu_layers.AUTO)
    page.load_options.auto.setChecked(False)
    page.load_options.slider.setValue(3)
    assert Settings.load().n_gpu_layers_target == 3


def test_load_options_say_when_they_apply_and_reload(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.show_page("settings")
    engine = loaded.ctx.engine
    assert page.pending.text() == APPLY_NOTE and page.reload_button.isHidden()
    layers = (engine.target_info.n_layers or 0) + 1
    assert page.load_options.layers_label.text() == f"0 / {layers} layers"  # CPU: auto is 0
    page.n_ctx.setValue(2048)
    assert page.pending.text() == STALE_NOTE and not page.reload_button.isHidden()
    with qtbot.waitSignals([engine.target_loaded, engine.draft_loaded], timeout=60000):
        page.reload_button.click()
    assert engine.has_draft and "tiny-draft" in engine.draft_info.display_name
    assert page.pending.text() == APPLY_NOTE and page.reload_button.isHidden()


def _indicator_contrast(box) -> int:  # type: ignore[no-untyped-def]
    opt = QStyleOptionButton()
    box.initStyleOption(opt)
    r = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, opt, box)
    img = box.grab().toImage()
    bg = img.pixelColor(img.width() - 2, 2).lightness()
    return max(abs(img.pixelColor(x, y).lightness() - bg)
               for x in range(r.left(), r.right() + 1) for y in range(r.top(), r.bottom() + 1))


def test_server_checkbox_visible_in_both_themes(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.show_page("settings")
    for name in ("dark", "light"):
        page.theme.setCurrentIndex(page.theme.findData(name))
        qtbot.waitUntil(lambda n=name: theme.current() == n)
        assert _indicator_contrast(page.serve) > 60, name  # was 7 in the dark theme


def test_folder_picker_opens_in_the_models_folder(make_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda _p, _t, start="": asked.append(start) or ""))
    w = make_window()
    page = w.show_page("settings")
    page.folders.add_button.click()
    page.folders.change_dir.click()
    assert asked == [str(w.ctx.library.models_dir)] * 2


def test_auto_is_resolved_at_each_load(make_window, tiny, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from specula.gui import engine_worker

    asked: list[tuple[int, str, int]] = []

    def resolve(setting: int, path: str, n_ctx: int) -> int:
        asked.append((setting, path, n_ctx))
        return 0

    monkeypatch.setattr(engine_worker, "resolve_for_file", resolve)
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    n_ctx = w.ctx.settings.n_ctx
    assert asked == [(gpu_layers.AUTO, str(tiny["target"]), n_ctx),
                     (gpu_layers.AUTO, str(tiny["draft"]), n_ctx)]
