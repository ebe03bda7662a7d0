"""A first run finds the models already on disk (issue 45, item 8): the welcome screen and the
empty My Models offer LM Studio's folder and the Hugging Face cache in one click, and an
"Add folder…" button; the models then appear in the library."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specula.core.settings import Settings
from specula.gui.models.library_page import LibraryPage


@pytest.fixture
def other_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub_models) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """A home with LM Studio's models folder and a Hugging Face cache, one GGUF in each."""
    home, hf_home = tmp_path / "home", tmp_path / "hf"
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    lm = home / ".lmstudio" / "models"
    dest = lm / "lmstudio-community" / "Tiny-GGUF" / "tiny-coder-0.5b-q4_k_m.gguf"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(hub_models["small"], dest)
    repo = hf_home / "hub" / "models--specula-test--Tiny-Coder-1.5B-GGUF"
    blob = repo / "blobs" / "0123abcd"
    blob.parent.mkdir(parents=True)
    shutil.copyfile(hub_models["medium"], blob)
    link = repo / "snapshots" / "main1" / "tiny-coder-1.5b-q8_0.gguf"
    link.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(blob, link.parent), link)
    return {"lm": lm, "hub": hf_home / "hub"}


def test_the_welcome_screen_offers_the_folders_found(other_apps, make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    offers = w.chat.empty.offers
    qtbot.waitUntil(lambda: len(offers.buttons) == 2, timeout=10000)
    assert w.chat.centre_stack.currentWidget() is w.chat.empty and offers.isVisibleTo(w)
    texts = [b.text() for b in offers.buttons]
    assert texts == ["Add LM Studio models (1 GGUF file)",
                     "Add Hugging Face cache models (1 GGUF file)"]
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=20000):
        offers.buttons[0].click()  # one click: indexed, rescanned
    assert Settings.load().extra_model_dirs == [str(other_apps["lm"])]
    assert [m.name for m in w.ctx.library.models] == ["tiny-coder-0.5b-q4_k_m.gguf"]
    qtbot.waitUntil(lambda: [b.text() for b in offers.buttons] ==
                    ["Add Hugging Face cache models (1 GGUF file)"], timeout=10000)
    with qtbot.waitSignal(w.ctx.library.scanned, timeout=20000):
        offers.buttons[0].click()
    names = sorted(m.name for m in w.ctx.library.models)
    assert names == ["tiny-coder-0.5b-q4_k_m.gguf", "tiny-coder-1.5b-q8_0.gguf"]


def test_the_empty_my_models_offers_them_and_add_folder(other_apps, ctx, qtbot,
                                                         tmp_path) -> None:  # type: ignore[no-untyped-def]
    page = LibraryPage(ctx)
    qtbot.addWidget(page)
    page.show()
    assert page.empty.isVisible() and not page.splitter.isVisible()
    qtbot.waitUntil(lambda: len(page.offers.buttons) == 2, timeout=10000)
    mine = tmp_path / "my-ggufs"
    mine.mkdir()
    shutil.copyfile(other_apps["lm"] / "lmstudio-community" / "Tiny-GGUF" /
                    "tiny-coder-0.5b-q4_k_m.gguf", mine / "mine-0.5b-q4_k_m.gguf")
    page.offers.pick_folder = lambda _w, _title: str(mine)
    with qtbot.waitSignal(page.library_shown, timeout=20000):
        page.offers.add_folder.click()
    assert ctx.settings.extra_model_dirs == [str(mine)]
    assert page.proxy.rowCount() == 1 and page.splitter.isVisible()
    assert not page.empty.isVisible()
