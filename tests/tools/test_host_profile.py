"""The host profile's parts are exclusive times: a wrapped call inside another is counted
once, in the inner part, so the parts add up to the wrapped time."""

from __future__ import annotations

import pytest

from specula_tools import host_profile


def test_nested_parts_are_counted_once_in_the_inner_part(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    def tick(dt: float) -> None:
        now[0] += dt

    monkeypatch.setattr(host_profile.time, "perf_counter", clock)
    monkeypatch.setattr(host_profile, "_spent", host_profile.defaultdict(float))
    monkeypatch.setattr(host_profile, "_calls", host_profile.defaultdict(int))

    inner = host_profile._timed("inner", lambda: tick(3.0))

    def outer_body() -> None:
        tick(1.0)
        inner()
        tick(2.0)
        inner()

    outer = host_profile._timed("outer", outer_body)
    outer()
    assert host_profile._spent["outer"] == pytest.approx(3.0)  # 1 + 2, without the inner calls
    assert host_profile._spent["inner"] == pytest.approx(6.0)
    assert host_profile._calls == {"outer": 1, "inner": 2}
    assert host_profile._stack == []
