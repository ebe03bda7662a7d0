"""Draft recommendation: from the library and from the (fake) hub, ranked and checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specula.core.gguf.compat import Verdict, check
from specula.core.gguf.model_info import read_model_info
from specula.core.hub.errors import HubError
from specula.core.hub.targets import resolve_model
from specula.core.library.scan import Library
from specula.core.pairing.drafts import (
    Role,
    hub_drafts,
    library_drafts,
    library_pairs,
    merge_hub,
    role_of,
)
from specula.core.pairing.names import family_key, family_prefix, size_from_name
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import (
    MEDIUM_REPO,
    SMALL_FILE,
    SMALL_REPO,
    TARGET_FILE,
    TARGET_REPO,
    ZEBRA_REPO,
)


def test_names() -> None:
    assert size_from_name("Qwen2.5-Coder-7B-Instruct-GGUF") == 7e9
    assert size_from_name("Qwen2.5-Coder-0.5B-Instruct") == 5e8
    assert size_from_name("SmolLM2-360M-Instruct") == 3.6e8
    assert size_from_name("Qwen2.5-Coder") is None
    assert family_prefix("Qwen2.5-Coder-7B-Instruct-GGUF") == "Qwen2.5-Coder"
    assert family_key("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") == family_key(
        "Qwen2.5-Coder-7B-Instruct-GGUF") == "qwen2-5-coder-instruct"


@pytest.fixture
def library(tmp_path: Path, hub_models: dict[str, Path], tiny: dict[str, Path]) -> Library:
    models = tmp_path / "models"
    layout = {
        "t/Tiny-Coder-7B-Instruct-GGUF/tiny-coder-7b-instruct-f32.gguf": hub_models["big"],
        "t/Tiny-Coder-0.5B-Instruct-GGUF/tiny-coder-0.5b-instruct-f32.gguf": hub_models["small"],
        "t/Tiny-Coder-1.5B-Instruct-GGUF/tiny-coder-1.5b-instruct-f32.gguf": hub_models["medium"],
        "z/Zebra-GGUF/zebra-0.5b-f32.gguf": hub_models["zebra"],
        "v/Vocab-GGUF/tiny-vocab64.gguf": tiny["vocab_small_diff"],
        "v/Text-GGUF/tiny-text.gguf": tiny["token_text"],
    }
    for rel, src in layout.items():
        (models / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, models / rel)
    return Library(models)


def test_library_drafts_ranked(library: Library) -> None:
    target_path = library.models_dir / "t/Tiny-Coder-7B-Instruct-GGUF/tiny-coder-7b-instruct-f32.gguf"
    target = read_model_info(target_path)
    found = library_drafts(target, library.scan().models, target_path)
    names = [Path(c.source).name for c in found]
    # Same tokenizer and much smaller first; a compatible-but-different vocab last;
    # the incompatible tokenizers (other vocab type, a renamed token) and the target
    # itself are not offered.
    assert names == ["tiny-coder-0.5b-instruct-f32.gguf", "tiny-coder-1.5b-instruct-f32.gguf",
                     "tiny-vocab64.gguf"]
    assert [c.report.verdict for c in found] == [Verdict.IDENTICAL, Verdict.IDENTICAL,
                                                 Verdict.COMPATIBLE]
    assert "same family" in found[0].reasons and "same tokenizer" in found[0].reasons
    assert all(c.report.usable for c in found)
    assert found[0].to_dict()["verdict"] == "identical"


def test_no_draft_bigger_than_the_target(library: Library) -> None:
    small = read_model_info(
        library.models_dir / "t/Tiny-Coder-0.5B-Instruct-GGUF/tiny-coder-0.5b-instruct-f32.gguf")
    assert library_drafts(small, library.scan().models) == []


def test_hub_drafts_for_a_hub_target(fake_hub: FakeHub) -> None:
    target = resolve_model(f"{TARGET_REPO}/{TARGET_FILE}")
    assert target.repo_id == TARGET_REPO and target.weights == target.info.file_size
    found = hub_drafts(target.info, TARGET_REPO)
    assert found.query == "Tiny-Coder"
    assert [c.source for c in found.candidates] == [
        f"{SMALL_REPO}/{SMALL_FILE}", f"{MEDIUM_REPO}/tiny-coder-1.5b-instruct-q8_0.gguf"]
    assert all(c.report.verdict is Verdict.IDENTICAL for c in found.candidates)
    assert [c.source.split("/")[1] for c in found.rejected] == [ZEBRA_REPO.split("/")[1]]
    assert not found.rejected[0].report.usable
    # Verified by reading remote headers, not by names: the CDN saw range requests.
    assert fake_hub.requests_to(f"/cdn/{SMALL_REPO}/")


def test_hub_drafts_for_a_local_target(fake_hub: FakeHub, hub_models: dict[str, Path]) -> None:
    target = resolve_model(str(hub_models["big"]))
    assert target.path == hub_models["big"]
    found = hub_drafts(target.info)  # searched by the header's name, "Tiny-Coder-7B-Instruct"
    assert found.candidates and found.candidates[0].source.startswith(SMALL_REPO)


def test_hub_drafts_skip_broken_repos(fake_hub: FakeHub) -> None:
    fake_hub.status_for[f"/api/models/{SMALL_REPO}"] = 500
    target = resolve_model(f"{TARGET_REPO}/{TARGET_FILE}")
    found = hub_drafts(target.info, TARGET_REPO)
    assert any(SMALL_REPO in s and "500" in s for s in found.skipped)
    assert [c.source.split("/")[1] for c in found.candidates] == [MEDIUM_REPO.split("/")[1]]


def test_resolve_model_errors(fake_hub: FakeHub) -> None:
    with pytest.raises(HubError, match="neither a GGUF file"):
        resolve_model("no-such-thing.gguf")
    with pytest.raises(HubError, match="not found"):
        resolve_model(f"{TARGET_REPO}/missing-q4_0.gguf")


def test_resolve_split_remote_model_counts_all_parts(fake_hub: FakeHub) -> None:
    model = resolve_model(f"{TARGET_REPO}/tiny-coder-7b-instruct-f16-00001-of-00003.gguf")
    assert model.weights == len(fake_hub.repos[TARGET_REPO].files[TARGET_FILE].data)


def test_the_same_file_in_two_folders_is_one_candidate(library: Library, tmp_path: Path) -> None:
    small = library.models_dir / "t/Tiny-Coder-0.5B-Instruct-GGUF/tiny-coder-0.5b-instruct-f32.gguf"
    elsewhere = tmp_path / "lmstudio" / "someone" / small.name
    elsewhere.parent.mkdir(parents=True)
    shutil.copyfile(small, elsewhere)
    target_path = library.models_dir / "t/Tiny-Coder-7B-Instruct-GGUF/tiny-coder-7b-instruct-f32.gguf"
    twin_target = tmp_path / "lmstudio" / "someone" / target_path.name
    shutil.copyfile(target_path, twin_target)
    both = Library(library.models_dir, extra_dirs=[tmp_path / "lmstudio"])
    models = both.scan().models
    assert sum(m.name == small.name for m in models) == 2  # the library lists both copies
    found = library_drafts(read_model_info(target_path), models, target_path)
    names = [Path(c.source).name for c in found]
    assert names.count(small.name) == 1
    assert target_path.name not in names  # nor the target's own copy in the other folder


def test_library_pairs_sees_both_directions(library: Library) -> None:
    models = library.scan().models
    medium = library.models_dir / "t/Tiny-Coder-1.5B-Instruct-GGUF/tiny-coder-1.5b-instruct-f32.gguf"
    pairs = library_pairs(read_model_info(medium), models, path=medium)
    me = read_model_info(medium)
    infos = {m.name: read_model_info(m.path) for m in models}
    # expected from the headers directly: usable with llama.cpp's rules, and smaller / larger
    smaller = {n for n, i in infos.items() if (i.parameter_count or 0) < (me.parameter_count or 0)
               and check(me, i).usable}
    larger = {n for n, i in infos.items() if (i.parameter_count or 0) > (me.parameter_count or 0)
              and check(i, me).usable}
    assert "tiny-coder-0.5b-instruct-f32.gguf" in smaller
    assert "tiny-coder-7b-instruct-f32.gguf" in larger
    assert {c.name for c in pairs.drafts} == smaller
    assert {c.name for c in pairs.targets} == larger
    assert all(c.model is not None and str(c.model.path) == c.source
               for c in pairs.drafts + pairs.targets)
    # the drafts half is exactly what the drafts question answers
    assert [c.source for c in pairs.drafts] == [
        c.source for c in library_drafts(read_model_info(medium), models, medium)]


def test_a_downloaded_hub_draft_is_listed_once(fake_hub: FakeHub, tmp_path: Path) -> None:
    target = resolve_model(f"{TARGET_REPO}/{TARGET_FILE}")
    hub = hub_drafts(target.info, TARGET_REPO).candidates
    models = tmp_path / "models"
    dest = models / SMALL_REPO / SMALL_FILE
    dest.parent.mkdir(parents=True)
    dest.write_bytes(fake_hub.repos[SMALL_REPO].files[SMALL_FILE].data)
    local = library_drafts(target.info, Library(models).scan().models)
    assert [c.name for c in local] == [SMALL_FILE]
    rest = merge_hub(local, hub)
    assert f"{SMALL_REPO}/{SMALL_FILE}" not in [c.source for c in rest]
    assert len(rest) == len(hub) - 1
    assert local[0].hub_source == f"{SMALL_REPO}/{SMALL_FILE}"


def test_role_by_size() -> None:
    assert role_of(7e9, 5e8) is Role.DRAFT and role_of(5e8, 7e9) is Role.TARGET
    assert role_of(7e9, 7.05e9) is Role.SAME and role_of(None, 1.0) is Role.UNKNOWN
