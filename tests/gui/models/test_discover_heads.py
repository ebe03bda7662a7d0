"""Discover finds the loaded target's draft heads on the (fake) hub: repositories found by
the target's name, every file's header read and checked, fitting heads downloadable."""

from __future__ import annotations

from pathlib import Path

from specula.core.pairing.heads import is_head_file
from specula.gui.models.discover_page import DiscoverPage
from specula_tools.tiny_heads import build_head, spec_for
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import BIG, TARGET_FILE, TARGET_REPO
from tests.gui.models.conftest import put_model

EAGLE_REPO = "heads-org/Tiny-Coder-7B-Instruct-EAGLE3-GGUF"
DFLASH_REPO = "other-org/Tiny-Coder-7B-Instruct-DFlash-b4"
NOT_A_HEAD_REPO = "merges/Tiny-Coder-7B-Instruct-eagle-merge-GGUF"  # a model, named like a head


def test_discover_finds_heads_for_the_loaded_target(ctx, fake_hub: FakeHub, hub_models,
                                                     qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fits = build_head(tmp_path / "tiny-coder-7b-eagle3.gguf",
                      spec_for("eagle3", BIG.n_layers, target_hidden=BIG.n_embd))
    # a DFlash head's hidden size must be the target's: this one is for a 64-wide target
    other = build_head(tmp_path / "tiny-coder-dflash.gguf", spec_for("dflash", BIG.n_layers))
    fake_hub.add_repo(EAGLE_REPO, {fits.name: fits})
    fake_hub.add_repo(DFLASH_REPO, {other.name: other})
    fake_hub.add_repo(NOT_A_HEAD_REPO, {"merge-q8_0.gguf": hub_models["small"]})
    page = DiscoverPage(ctx)
    qtbot.addWidget(page)
    page.show()
    assert not page.heads.find_button.isEnabled()  # no target: nothing to look for
    target = put_model(Path(ctx.library.models_dir), TARGET_REPO, hub_models["big"], TARGET_FILE)
    with qtbot.waitSignal(ctx.library.scanned, timeout=30000):
        ctx.library.rescan()
    ctx.engine.load_target(str(target))
    qtbot.waitUntil(lambda: page.heads.find_button.isEnabled(), timeout=60000)
    with qtbot.waitSignal(page.heads.heads_found, timeout=60000) as found:
        page.heads.find_button.click()
    result = found.args[0]
    assert result.query == "Tiny-Coder-7B-Instruct"  # the target repository's name
    assert [(c.source, c.kind) for c in result.fitting] == [(f"{EAGLE_REPO}/{fits.name}", "eagle3")]
    assert [(c.source, c.kind) for c in result.misfitting] == [(f"{DFLASH_REPO}/{other.name}", "dflash")]
    assert f"hidden size 64, the target's is {BIG.n_embd}" in result.misfitting[0].reason
    assert set(page.heads.buttons) == {f"{EAGLE_REPO}/{fits.name}"}  # only a fitting head downloads
    # Download puts it in the library, where it is a head (the chat's picker offers it)
    with qtbot.waitSignal(ctx.downloads.download_finished, timeout=60000):
        page.heads.buttons[f"{EAGLE_REPO}/{fits.name}"].click()
    qtbot.waitUntil(lambda: any(m.name == fits.name for m in ctx.library.models), timeout=30000)
    assert [is_head_file(m) for m in ctx.library.models if m.name == fits.name] == [True]
