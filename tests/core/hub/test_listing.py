"""Search, listing and remote headers against the fake hub, over real HTTP."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from specula.core.gguf.model_info import GGUFError, read_model_info
from specula.core.hub.client import HubClient, description_from_card, split_target
from specula.core.hub.errors import ErrorKind, HubError
from specula.core.hub.remote_header import RemoteSource, read_remote_info
from tests.fixtures.fake_hub import FakeHub
from tests.fixtures.hub_repos import (
    PRIVATE_REPO,
    SMALL_REPO,
    SPLIT_FIRST,
    TARGET_FILE,
    TARGET_REPO,
    ZEBRA_REPO,
)


def test_search_sorted_by_downloads_and_likes(fake_hub: FakeHub) -> None:
    hub = HubClient()
    found = [r.repo_id for r in hub.search("tiny-coder")]
    assert found == [TARGET_REPO, ZEBRA_REPO, SMALL_REPO,
                     "specula-test/Tiny-Coder-1.5B-Instruct-GGUF"]
    by_likes = hub.search("tiny-coder", sort="likes", limit=2)
    assert [r.repo_id for r in by_likes] == [SMALL_REPO, TARGET_REPO]
    assert by_likes[0].likes == 50 and by_likes[0].downloads == 500
    query = fake_hub.requests_to("/api/models")[-1].query
    assert query["search"] == ["tiny-coder"] and query["filter"] == ["gguf"]
    assert query["sort"] == ["likes"] and query["limit"] == ["2"]


def test_search_leaves_out_non_gguf_repos(fake_hub: FakeHub) -> None:
    found = [r.repo_id for r in HubClient().search("specula")]
    assert TARGET_REPO in found and "specula-test/not-gguf" not in found
    with pytest.raises(HubError, match="unknown sort"):
        HubClient().search("x", sort="random")


def test_listing_groups_split_files_and_ignores_other_files(fake_hub: FakeHub) -> None:
    listing = HubClient().list_files(TARGET_REPO)
    names = [m.filename for m in listing.models]
    assert names == [SPLIT_FIRST, "tiny-coder-7b-instruct-q4_k_m.gguf",
                     "tiny-coder-7b-instruct-q8_0.gguf"]
    split = listing.models[0]
    assert split.split and split.complete and len(split.files) == 3
    assert split.quantization == "F16"
    assert split.total_size == sum(f.size or 0 for f in split.files)
    single = listing.find(TARGET_FILE)
    assert single is not None and single.quantization == "Q4_K_M"
    assert single.files[0].sha256 == fake_hub.repos[TARGET_REPO].files[TARGET_FILE].sha256
    assert sorted(listing.ignored_files) == ["README.md", "config.json"]
    assert listing.description is not None
    assert listing.description.startswith("GGUF quantizations of Tiny Coder 7B Instruct, a tiny")
    json.dumps(listing.to_dict())


def test_card_description_skips_front_matter_and_headings() -> None:
    card = "---\na: b\n---\n# Title\n\n<img src=x>\n\nShort.\n\nA real paragraph about the model.\n"
    assert description_from_card(card) == "A real paragraph about the model."
    assert description_from_card("---\nunterminated") is None


def test_remote_header_matches_the_local_file(fake_hub: FakeHub,
                                              hub_models: dict[str, Path]) -> None:
    local = read_model_info(hub_models["big"])
    remote = read_remote_info(TARGET_REPO, TARGET_FILE)
    assert remote.tokenizer_fingerprint == local.tokenizer_fingerprint
    assert remote.parameter_count == local.parameter_count
    assert remote.context_length == local.context_length
    assert remote.quantization == local.quantization == "F32"
    assert remote.file_size == hub_models["big"].stat().st_size
    assert remote.source == f"{TARGET_REPO}/{TARGET_FILE}"
    # Range requests went to the CDN host after the redirect.
    ranged = [r for r in fake_hub.log if r.path.startswith("/cdn/") and "range" in r.headers]
    assert ranged and ranged[0].headers["range"].startswith("bytes=0-")


def test_remote_header_cache_is_reused(fake_hub: FakeHub) -> None:
    first = RemoteSource(TARGET_REPO, TARGET_FILE)
    read_model_info(first)
    assert first.requests_made >= 1
    second = RemoteSource(TARGET_REPO, TARGET_FILE)
    info = read_model_info(second)
    assert second.requests_made == 0
    assert info.n_layers == 4


def test_remote_header_when_the_server_ignores_ranges(fake_hub: FakeHub) -> None:
    fake_hub.ignore_range = True
    source = RemoteSource(SMALL_REPO, "tiny-coder-0.5b-instruct-q4_k_m.gguf", use_cache=False)
    assert read_model_info(source).n_layers == 1


def test_remote_header_of_a_non_gguf_file_is_a_clear_error(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("specula-test/fake", {"fake.gguf": b"<html>not a model</html>" * 4})
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_remote_info("specula-test/fake", "fake.gguf")


@pytest.mark.parametrize(("status", "kind", "text"), [
    (404, ErrorKind.NOT_FOUND, "not found"),
    (401, ErrorKind.UNAUTHORIZED, "HF_TOKEN"),
    (500, ErrorKind.SERVER, "failed to answer"),
])
def test_listing_errors_are_clear(fake_hub: FakeHub, status: int, kind: ErrorKind,
                                  text: str) -> None:
    fake_hub.status_for[f"/api/models/{TARGET_REPO}"] = status
    with pytest.raises(HubError) as err:
        HubClient().list_files(TARGET_REPO)
    assert err.value.kind is kind and text in err.value.message
    assert "\n" not in err.value.message


def test_missing_repo_and_private_repo(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HubError) as err:
        HubClient().list_files("nobody/nothing")
    assert err.value.kind is ErrorKind.NOT_FOUND
    with pytest.raises(HubError) as err:
        HubClient().list_files(PRIVATE_REPO)
    assert err.value.kind is ErrorKind.UNAUTHORIZED
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    assert HubClient().list_files(PRIVATE_REPO).models[0].filename == "secret-q4_0.gguf"
    assert fake_hub.log[-1].headers.get("authorization") == "Bearer hf_test_token"


def test_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on discard
    with pytest.raises(HubError) as err:
        HubClient(timeout=2).search("qwen")
    assert err.value.kind is ErrorKind.OFFLINE and "cannot reach" in err.value.message
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="offline mode"):
        HubClient().list_files(TARGET_REPO)


@pytest.mark.parametrize("body", [
    b"not json at all",
    b'{"id": 5}',
    b'{"id": "a/b", "siblings": "nope"}',
    b'{"id": "a/b", "siblings": [{"rfilename": "../../evil.gguf"}, {"rfilename": 7},'
    b' {"rfilename": "ok.gguf", "size": -5}, {"rfilename": "x.gguf", "lfs": {"size": 1}}]}',
    b"[1, 2, 3]",
    b"null",
])
def test_hostile_model_info_never_crashes(fake_hub: FakeHub, body: bytes) -> None:
    fake_hub.hostile[f"/api/models/{TARGET_REPO}"] = body
    try:
        listing = HubClient().list_files(TARGET_REPO)
    except HubError as exc:
        assert exc.kind is ErrorKind.BAD_REPLY
    else:
        assert all(".." not in f.path for m in listing.models for f in m.files)


@pytest.mark.parametrize("body", [b"{}", b"[{}, 3, {\"id\": 9}, {\"id\": \"../x\"}]", b"garbage"])
def test_hostile_search_reply(fake_hub: FakeHub, body: bytes) -> None:
    fake_hub.hostile["/api/models"] = body
    try:
        assert HubClient().search("x") == []
    except HubError as exc:
        assert exc.kind is ErrorKind.BAD_REPLY


def test_target_spec_parsing() -> None:
    assert split_target("Qwen/Qwen2.5-7B-GGUF/sub/q4.gguf") == ("Qwen/Qwen2.5-7B-GGUF", "sub/q4.gguf")
    assert split_target("only/two") is None
    assert split_target("a/b/../c.gguf") is None


def _hostile_gguf(string_len: int) -> bytes:
    # magic, version 3, 1 tensor, 1 key/value, then a key whose length is a lie.
    return (b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + struct.pack("<Q", string_len)
            + b"k" * 64)


@pytest.mark.parametrize("string_len", [2**62, 60 * 1024 * 1024])
def test_hostile_remote_header_fails_fast(fake_hub: FakeHub, string_len: int) -> None:
    fake_hub.add_repo("specula-test/hostile", {"evil.gguf": _hostile_gguf(string_len)})
    source = RemoteSource("specula-test/hostile", "evil.gguf", use_cache=False)
    with pytest.raises(GGUFError, match=r"absurd string length|truncated header"):
        read_model_info(source)
    assert source.requests_made <= 1  # refused from the declared size, nothing big fetched


def test_truncated_remote_model_is_a_clear_error(fake_hub: FakeHub,
                                                 hub_models: dict[str, Path]) -> None:
    data = hub_models["big"].read_bytes()[:5000]
    fake_hub.add_repo("specula-test/cut", {"cut.gguf": data})
    with pytest.raises(GGUFError, match="truncated header"):
        read_remote_info("specula-test/cut", "cut.gguf")
