"""The search reply is read streamed and capped: a 300 MB reply costs a few MB, not 1.5 GB."""

from __future__ import annotations

import tracemalloc

import pytest

from specula.core.hub.client import MAX_SEARCH_REPLY_BYTES, HubClient
from specula.core.hub.errors import ErrorKind, HubError
from tests.fixtures.fake_hub import FakeHub

ITEM = b'{"id": "owner/name", "downloads": 1, "likes": 2, "tags": ["gguf"]},'


def test_a_huge_search_reply_is_refused_without_taking_memory(fake_hub: FakeHub) -> None:
    fake_hub.endless["/api/models"] = (b"[" + ITEM, 300 * 1024 * 1024 // len(ITEM))
    tracemalloc.start()
    try:
        with pytest.raises(HubError) as err:
            HubClient().search("anything")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.kind is ErrorKind.BAD_REPLY and "larger than 8 MB" in err.value.message
    assert peak < 3 * MAX_SEARCH_REPLY_BYTES  # the chunks up to the cap, and their join
    assert fake_hub.streamed_bytes < 100 * 1024 * 1024  # the client stopped reading early


def test_a_declared_huge_reply_is_refused_before_reading(fake_hub: FakeHub) -> None:
    fake_hub.hostile["/api/models"] = b" " * (MAX_SEARCH_REPLY_BYTES + 1)
    with pytest.raises(HubError, match="larger than 8 MB"):
        HubClient().search("anything")


def test_deeply_nested_json_is_a_malformed_reply(fake_hub: FakeHub) -> None:
    fake_hub.hostile["/api/models"] = b"[" * 200_000
    with pytest.raises(HubError, match="malformed reply"):
        HubClient().search("anything")


def test_a_normal_search_still_works(fake_hub: FakeHub) -> None:
    assert [r.repo_id for r in HubClient().search("tiny-coder", limit=2)]
