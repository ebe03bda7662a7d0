"""The window fits 1024x700 and 1280x800 on every page whatever its labels say (issue 45,
item 2): with every label that changes at run time set to its longest, the main window's
minimum size stays within 1024x700, and a window of either size is that size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from specula.core.engine.verdict import PolicyVerdict
from specula.gui.main_window import PAGES

LONG_NAME = "Qwen2.5-Coder-32B-Instruct-abliterated-uncensored-with-a-very-long-file-name"
LONG_PATH = "/home/someone/models/lmstudio-community/" + LONG_NAME * 2 + "-Q4_K_M.gguf"
SENTENCE = ("tensor 'blk.63.ffn_down.weight' data is not within the file bounds, model is "
            "corrupted or incomplete")


def at_longest(w: Any, tmp_path: Path) -> None:
    """Every label that changes at run time, at the longest it can say."""
    chat = w.chat
    bar = chat.model_bar
    # the pause in the header, counting down from the most replies a back-off reaches
    bar.show_verdict(PolicyVerdict(paused=True, recheck_in=1_000_000, erratic=True))
    bar.recheck.set_verdict(PolicyVerdict(paused=True, recheck_in=1_000_000))
    bar.status.setText(f"Target: {LONG_NAME} 32B · Q4_K_M on CUDA, 128 threads\n"
                       f"Draft: {LONG_NAME} 0.5B · Q4_K_M (measuring the pair…)")
    bar.progress.show()
    bar.cancel.show()
    # a failed load's banner, with the path that failed
    chat.banner.show_message(f"Could not load {LONG_NAME}",
                             [f"{LONG_PATH}: llama.cpp could not load this model: {SENTENCE}"],
                             f"{LONG_PATH}: {SENTENCE}")
    chat.banner.details_button.setChecked(True)
    # the counter and the note under the composer at the largest context
    chat.context_bar.show_count(1_048_576, 1_048_576, 1_048_576)
    chat.context_bar.show_left_out(99_999)
    # files attached with long names
    for i in range(4):
        f = tmp_path / f"{LONG_NAME}-{i}.md"
        f.write_text("some text " * 50)
        chat.attach_bar.add_file(str(f))
    chat.edit_banner.show()
    chat.generate_button.show()
    compare = w.pages["compare"]
    compare.models.setText(f"Target: {LONG_NAME}  32B · Q4_K_M    Draft: {LONG_NAME}  0.5B · Q4_K_M")
    compare.banner.setText(f"The draft barely ran ({SENTENCE})")
    for col in (compare.plain, compare.spec):
        col.footer.setText("Last run: " + SENTENCE)
    models = w.pages["models"]
    models.summary.setText("   99,999 models · 999.9 TB · 99 folders")
    models.details.title.setText(LONG_NAME)


@pytest.mark.parametrize("size", [(1024, 700), (1280, 800)])
def test_every_page_fits_with_every_label_at_its_longest(make_window, tiny, tmp_path, qtbot, size) -> None:  # type: ignore[no-untyped-def]
    w = make_window(str(tiny["target"]), str(tiny["draft"]))
    qtbot.waitUntil(lambda: w.ctx.engine.has_draft, timeout=60000)
    at_longest(w, tmp_path)
    assert w.chat.side_panel_open  # the chat with its right panel open
    wide, high = size
    for spec in PAGES:
        w.show_page(spec.key)
        w.resize(wide, high)
        QApplication.processEvents()
        least = w.minimumSizeHint()
        assert (least.width(), least.height()) <= (1024, 700) and least.height() <= 700, \
            f"{spec.key}: the window needs at least {least.width()}x{least.height()}"
        assert (w.width(), w.height()) == size, spec.key
