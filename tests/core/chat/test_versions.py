"""Versions of a regenerated reply: kept, switched, and the row always shows the chosen one."""

from __future__ import annotations

from specula.core.chat import versions as v


def test_regenerating_twice_keeps_three_and_switching_restores_each() -> None:
    first = {"stats": {"tokens": 1}, "stop_reason": "eos"}
    earlier = v.history("one", first)
    second = v.with_new_version(earlier, "two", {"stats": {"tokens": 2}, "stop_reason": "length"})
    third = v.with_new_version(v.history("two", second), "three", {"stats": {"tokens": 3}})
    assert [x["content"] for x in third["versions"]] == ["one", "two", "three"]
    assert third["version"] == 2
    content, meta = v.select(third, 0)
    assert content == "one" and meta["stats"] == {"tokens": 1} and meta["stop_reason"] == "eos"
    assert meta["version"] == 0 and len(meta["versions"]) == 3
    content, meta = v.select(meta, 1)
    assert content == "two" and meta["stop_reason"] == "length"
    content, meta = v.select(meta, 9)  # clamped
    assert content == "three" and "stop_reason" not in meta


def test_history_of_a_plain_message_is_itself() -> None:
    assert v.history("x", {"stats": {"a": 1}, "other": 2}) == [{"content": "x", "stats": {"a": 1}}]
