"""Suggested pairs for Discover's first view: the library's, then the hub's most downloaded."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from specula.core.gguf.model_info import read_model_info
from specula.core.hub.client import HubClient
from specula.core.library.scan import Library
from specula.core.pairing.suggestions import hub_suggestions, library_suggestions
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, TARGET_REPO


def _put(models: Path, rel: str, src: Path) -> Path:
    dest = models / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def test_library_pairs_come_largest_first_with_their_best_draft(tmp_path: Path,
                                                                hub_models: dict[str, Path]) -> None:
    models = tmp_path / "models"
    big = _put(models, "t/Big/tiny-coder-7b.gguf", hub_models["big"])
    medium = _put(models, "t/Medium/tiny-coder-1.5b.gguf", hub_models["medium"])
    small = _put(models, "t/Small/tiny-coder-0.5b.gguf", hub_models["small"])
    _put(models, "z/Zebra/zebra-0.5b.gguf", hub_models["zebra"])  # pairs with nothing
    library = Library(models).scan().models
    pairs = library_suggestions(library)
    assert [(Path(p.target.source).name, Path(p.draft.source).name) for p in pairs] == [
        (big.name, small.name), (medium.name, small.name)]  # the smallest same-tokenizer draft
    assert all(p.ready and p.why == "in your library" for p in pairs)
    loaded = library_suggestions(library, read_model_info(medium), limit=1)
    assert [(p.target.source, p.why) for p in loaded] == [
        (str(medium), "the loaded target's best draft")]


def test_hub_pairs_are_popular_targets_with_a_verified_draft(fake_hub: FakeHub,
                                                             tmp_path: Path) -> None:
    pairs = hub_suggestions(HubClient())
    # one pair per family: the 7B (most downloaded) with the 0.5B; the 1.5B is the same family,
    # the Zebra's tokenizer differs, and 0.5B models are too small to be targets
    assert len(pairs) == 1
    (pair,) = pairs
    assert pair.target.source.startswith(TARGET_REPO + "/") and pair.target.location == "hub"
    assert pair.draft.source == f"{SMALL_REPO}/{SMALL_FILE}" and not pair.ready
    models = tmp_path / "models"
    _put(models, f"{SMALL_REPO}/{SMALL_FILE}", fake_hub_file(fake_hub, tmp_path))
    (again,) = hub_suggestions(HubClient(), models)
    assert again.draft.location == "library" and again.draft.source == str(
        (models / SMALL_REPO / SMALL_FILE).resolve())


def fake_hub_file(hub: FakeHub, tmp_path: Path) -> Path:
    path = tmp_path / "small-download.gguf"
    path.write_bytes(hub.repos[SMALL_REPO].files[SMALL_FILE].data)
    return path


def test_a_hub_pair_already_in_a_library_folder_is_that_pair(fake_hub: FakeHub,
                                                             hub_models: dict[str, Path],
                                                             tmp_path: Path) -> None:
    from specula.core.pairing.suggestions import Suggestions

    elsewhere = tmp_path / "lmstudio"
    _put(elsewhere, f"a/b/{SMALL_FILE}", fake_hub_file(fake_hub, tmp_path))
    big = fake_hub.repos[TARGET_REPO].files["tiny-coder-7b-instruct-q8_0.gguf"].data
    (elsewhere / "a/b/tiny-coder-7b-instruct-q8_0.gguf").write_bytes(big)
    library = Library(tmp_path / "models", extra_dirs=[elsewhere]).scan().models
    (hub,) = hub_suggestions(HubClient(), tmp_path / "models", library=library)
    assert hub.ready  # both files are in the library: Load, not Download
    assert hub.draft.source == str(elsewhere / "a/b" / SMALL_FILE)
    found = Suggestions(library_suggestions(library))
    found.add([hub])
    assert len(found.pairs) == 1  # the library's pair and the hub's are one
    other_copy = replace(hub, draft=replace(hub.draft, source="/elsewhere/" + SMALL_FILE))
    found.add([other_copy])
    assert len(found.pairs) == 1  # another copy of the same two files is still that pair
