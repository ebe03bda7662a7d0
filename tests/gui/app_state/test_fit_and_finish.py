"""Fit and finish (issue 26, items 5, 7, 8 and 10): the window fits the screen, names stay
apart, the status wraps, loading says what it does, files never vanish, small habits."""

from __future__ import annotations

import json
from dataclasses import replace

from PySide6.QtCore import QRect, QSize, Qt, QUrl
from PySide6.QtGui import QGuiApplication

from specula.core.gguf.model_info import read_model_info
from specula.core.settings import Settings
from specula.gui import theme
from specula.gui.chat.model_pickers import PATH_ROLE, USABLE_ROLE
from specula_tools.tiny_models import DRAFT, TARGET, build_tiny_model
from tests.gui.conftest import send_and_wait

# -- item 5: the window fits the screen ----------------------------------------------------

def test_first_window_fits_a_small_screen() -> None:
    from specula.gui.shell_geometry import first_geometry, inside

    available = QRect(0, 0, 1280, 800 - 26)  # a 1280x800 screen less a panel
    rect = first_geometry(available)
    assert available.contains(rect)
    assert rect.width() <= 1280 and rect.height() <= 774
    big = first_geometry(QRect(0, 0, 2560, 1440))
    assert big.size() == QSize(1320, 840)  # the preferred size where there is room
    assert inside(QRect(2000, 900, 1320, 840), available) == QRect(0, 0, 1280, 774)


def test_the_window_opens_inside_the_screen_and_remembers_its_size(make_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from specula.gui.main_window import MainWindow

    # A bare 1280x800 X server less a 26-pixel panel (the offscreen screen is 800x800,
    # below the window's minimum width, so the screen is given here).
    available = QRect(0, 0, 1280, 774)
    monkeypatch.setattr(MainWindow, "available_geometry", lambda self: available, raising=False)
    w = make_window()
    assert available.contains(w.geometry()), w.geometry()
    w.resize(1100, 700)
    w.close()
    again = make_window()
    assert (again.width(), again.height()) == (1100, 700)
    assert available.contains(again.geometry())


# -- item 10: the model boxes, the status line --------------------------------------------

def test_model_boxes_show_size_and_quant_apart_from_an_elided_name(make_window, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    # Two models of one family whose names differ in the middle; the header's name carries
    # a stale "AWQ" from the checkpoint it was converted from.
    long = " Instruct With A Long Descriptive Name Nobody Reads AWQ"
    a = build_tiny_model(tmp_path / "qwen2.5-coder-1.5b-instruct-awq-q4_k_m.gguf",
                         replace(TARGET, name="Qwen2.5 Coder 1.5B" + long))
    b = build_tiny_model(tmp_path / "qwen2.5-coder-0.5b-instruct-awq-q4_k_m.gguf",
                         replace(DRAFT, name="Qwen2.5 Coder 0.5B" + long, n_layers=1))
    details = []
    for path in (a, b):
        info = read_model_info(path)  # what the box must show whole: size and the file's quant
        details.append(f"{info.size_label} · {info.quantization}")
    assert details[0] != details[1]
    w = make_window()
    w.resize(1024, 700)
    bar = w.chat.model_bar
    with qtbot.waitSignal(w.ctx.engine.draft_loaded, timeout=60000):
        bar.choose_target(str(a))
        bar.choose_draft(str(b))
    combos = (bar.target_combo, bar.draft_combo)
    # once laid out at 1024 wide (the first layout passes see the boxes narrower); the
    # window stays 1024 wide (issue 45: it used to grow past the screen, to ~1400)
    qtbot.waitUntil(lambda: all(c.width() > 150 for c in combos), timeout=30000)
    assert w.width() == 1024
    shown = [c.shown_text() for c in combos]
    for text, detail in zip(shown, details, strict=True):
        assert text.endswith(detail), text
        assert text.startswith("Qw") and "…" in text and "AWQ" not in text, text
    assert shown[0] != shown[1]


def test_the_status_line_wraps_instead_of_cutting(loaded) -> None:  # type: ignore[no-untyped-def]
    status = loaded.chat.model_bar.status
    assert status.wordWrap()
    assert "tiny-draft" in status.full_text() and status.text() == status.full_text()


# -- item 8: the pair's timing is a named step --------------------------------------------

def test_loading_a_draft_names_the_measuring_step(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_target, timeout=60000)
    bar = w.chat.model_bar
    steps: list[tuple[str, str, str]] = []
    w.ctx.engine.load_step.connect(
        lambda kind, step: steps.append((kind, step, bar.progress.format())))
    with qtbot.waitSignal(w.ctx.engine.draft_loaded, timeout=60000):
        bar.choose_draft(str(tiny["draft"]))
    assert steps and steps[0][:2] == ("draft", "Measuring the pair")
    assert bar.progress.isHidden()


def test_the_progress_bar_and_status_name_the_step(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    bar = w.chat.model_bar
    w.ctx.engine.load_started.emit("draft", "/models/d.gguf")
    w.ctx.engine.load_step.emit("draft", "Measuring the pair")
    w.ctx.engine.load_progressed.emit("draft", 0.4)
    assert bar.progress.format().startswith("Measuring the pair")
    assert bar.progress.value() == 400
    assert bar.status.full_text().startswith("Measuring the pair")


# -- item 7: files never vanish; an incompatible draft says why in the list ---------------

def test_an_unreadable_file_is_listed_greyed_with_its_reason(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    folder = w.ctx.library.models_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "junk.gguf").write_bytes(b"this is not a gguf file at all" * 10)
    (folder / "tiny-target.gguf").write_bytes(tiny["target"].read_bytes())
    page = w.show_page("models")
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=30000):
        w.ctx.library.rescan()
    rows = {page.proxy.index(r, 0).data(): r for r in range(page.proxy.rowCount())}
    junk = [name for name in rows if name.startswith("junk.gguf")]
    assert junk and junk[0].endswith("— not a GGUF file")  # why, in the name; Arch: unreadable
    arch = page.proxy.index(rows[junk[0]], 1).data()
    assert arch == "unreadable"
    index = page.proxy.index(rows[junk[0]], 0)
    colour = index.data(Qt.ItemDataRole.ForegroundRole)
    assert colour is not None and colour.name() == theme.palette().muted
    readable = page.proxy.index(rows["tiny-target.gguf"], 0)
    assert readable.data(Qt.ItemDataRole.ForegroundRole) is None
    page.table.selectRow(rows[junk[0]])
    assert page.details.pairs_status.text().startswith("Specula cannot load this file")
    assert not page.details.load_target.isEnabled()


def test_an_incompatible_library_draft_is_listed_with_why(make_window, tiny, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    w.ctx.settings.extra_model_dirs = [str(tiny["other"].parent)]
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=30000):
        w.ctx.library.rescan()
    bar = w.chat.model_bar
    checked: list[int] = []
    bar.drafts_checked.connect(lambda: checked.append(bar._check_id))
    bar.choose_target(str(tiny["target"]))
    qtbot.waitUntil(lambda: bool(checked) and checked[-1] == bar._check_id, timeout=60000)
    items = [bar.draft_model.item(r) for r in range(bar.draft_model.rowCount())]
    other = [i for i in items if i.data(PATH_ROLE) == str(tiny["other"])]
    assert other, [i.text() for i in items]
    item = other[0]
    assert item.data(USABLE_ROLE) is False and not item.isEnabled()
    assert "— incompatible: " in item.text() and ".;" not in item.text()
    assert ". (" not in item.text() and not item.text().endswith(".")
    assert "tokenizer" in item.text().lower()


# -- item 10: small habits ---------------------------------------------------------------

def test_copy_says_copied(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    COPIED = "Copied"  # what the user reads
    page = loaded.chat
    widget = page.transcript.add_message("assistant", "")
    widget.set_text("Here:\n\n```python\nprint('hi')\n```\n")
    widget.render()
    widget.copy_button.click()
    assert widget.copy_button.text() == COPIED
    assert QGuiApplication.clipboard().text() == widget.text
    assert COPIED not in widget.body.toPlainText()
    widget.body.anchorClicked.emit(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text().strip() == "print('hi')"
    assert COPIED in widget.body.toPlainText()
    qtbot.waitUntil(lambda: widget.copy_button.text() == "Copy", timeout=60000)
    qtbot.waitUntil(lambda: COPIED not in widget.body.toPlainText(), timeout=60000)


def test_an_identical_greedy_regeneration_says_why(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    page = w.chat
    assert page.settings_panel.temperature.value() == 0
    send_and_wait(qtbot, w, "say something")
    page.banner.hide()
    with qtbot.waitSignal(page.reply_finished, timeout=120000):
        page.regenerate(page.transcript.messages[-1])
    assert page.banner.isVisible() and "same" in page.banner.title.text()
    assert any("temperature" in s for s in page.banner.sentences)


def test_repeat_penalty_in_the_panel_reaches_the_reply(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    panel = w.chat.settings_panel
    panel.repeat_penalty.setValue(1.3)
    assert abs(panel.sampling().repeat_penalty - 1.3) < 1e-9
    assert json.loads(panel.session.path().read_text())["generation"]["repeat_penalty"] == 1.3


def test_a_system_theme(make_window) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    page = w.show_page("settings")
    page.theme.setCurrentIndex(page.theme.findData("system"))
    assert Settings.load().theme == "system"
    assert theme.chosen() == "system" and theme.current() in ("dark", "light")
    page.theme.setCurrentIndex(page.theme.findData("dark"))
    assert theme.chosen() == theme.current() == "dark"


def test_compare_says_it_runs_while_it_runs(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    compare = w.show_page("compare")
    compare.prompt.setPlainText("hello")
    compare.options.rounds.setValue(1)
    with qtbot.waitSignal(compare.compared, timeout=180000):
        compare.run()
        assert compare.banner.text().startswith("Running"), compare.banner.text()
        seen: list[str] = []
        compare.client.busy_changed.connect(lambda _b: seen.append(compare.banner.text()))
    assert seen and not any(t.startswith("Ready") for t in seen[:-1]), seen
