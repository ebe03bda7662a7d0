"""The overflow policy on a counter whose figures are worked out by hand.

The counter charges 10 tokens per message plus one per character of content
(a stand-in for a template: every message costs its text and a frame), so the
expected kept messages below are computed from the message lengths alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pytest

from specula.core.chat.overflow import (
    ContextFull,
    OverflowPolicy,
    fit,
    left_out_text,
    prompt_budget,
)

FRAME = 10


def count(messages: Sequence[dict[str, str]]) -> int:
    return sum(FRAME + len(m["content"]) for m in messages)


def chat(turns: int, size: int = 40) -> list[dict[str, str]]:
    """A system prompt of 20 chars, then ``turns`` user/assistant pairs, then one user message."""
    out = [{"role": "system", "content": "s" * 20}]
    for i in range(turns):
        out += [{"role": "user", "content": f"u{i}".ljust(size, ".")},
                {"role": "assistant", "content": f"a{i}".ljust(size, ".")}]
    out.append({"role": "user", "content": "latest".ljust(size, ".")})
    return out


def roles_alternate(messages: Sequence[dict[str, str]]) -> bool:
    rest = [m["role"] for m in messages if m["role"] != "system"]
    return all(a != b for a, b in pairwise(rest)) and rest[0] == "user"


def test_whole_conversation_sent_when_it_fits() -> None:
    msgs = chat(3)  # 30 + 7 * 50 = 380 tokens
    for policy in OverflowPolicy:
        got = fit(msgs, policy, budget=380, count=count)
        assert got.messages == msgs and got.left_out == 0 and got.tokens == 380


def test_stop_refuses_instead_of_leaving_out() -> None:
    with pytest.raises(ContextFull, match="Stop at the limit"):
        fit(chat(3), OverflowPolicy.STOP, budget=379, count=count)


def test_truncate_middle_keeps_system_first_exchange_and_latest() -> None:
    msgs = chat(6)  # system 30, 13 messages of 50 = 680
    got = fit(msgs, OverflowPolicy.TRUNCATE_MIDDLE, budget=400, count=count, slack=0.25)
    # Target 300 after an overflow: system 30 + first exchange 100 + latest 50 = 180,
    # one more turn (100) = 280 <= 300, two more = 380 > 300: keep exactly one middle turn.
    kept = [m["content"][:2] for m in got.messages]
    assert kept == ["ss", "u0", "a0", "u5", "a5", "la"]
    assert got.left_out == 8 and got.tokens == 280 and got.start == 3
    assert roles_alternate(got.messages)


def test_rolling_window_keeps_system_and_latest_turns() -> None:
    got = fit(chat(6), OverflowPolicy.ROLLING_WINDOW, budget=400, count=count, slack=0.25)
    # Target 300: system 30 + latest 50 = 80; + 3 turns = 380 is over it, + 2 turns = 280.
    assert [m["content"][:2] for m in got.messages] == ["ss", "u4", "a4", "u5", "a5", "la"]
    assert got.left_out == 8 and got.start == 1


def test_left_out_is_sticky_so_the_prompt_keeps_its_beginning() -> None:
    first = fit(chat(6), OverflowPolicy.TRUNCATE_MIDDLE, budget=400, count=count)
    longer = chat(7)  # one more exchange: 280 + 100 = 380 still fits the budget
    again = fit(longer, OverflowPolicy.TRUNCATE_MIDDLE, budget=400, count=count,
                keep_out=first.left_out)
    assert again.left_out == first.left_out
    # Everything the first prompt kept before its latest message is again the beginning.
    assert again.messages[: len(first.messages) - 1] == first.messages[:-1]


def test_a_huge_first_exchange_falls_back_to_the_rolling_window() -> None:
    msgs = chat(4)
    msgs[1]["content"] = "x" * 1000  # the first user message alone is over the budget
    got = fit(msgs, OverflowPolicy.TRUNCATE_MIDDLE, budget=300, count=count)
    assert got.messages[0]["role"] == "system" and got.messages[-1]["content"].startswith("latest")
    assert all(len(m["content"]) < 1000 for m in got.messages)
    assert got.tokens <= 300


def test_latest_message_too_long_is_a_clear_refusal() -> None:
    msgs = chat(2)
    msgs[-1]["content"] = "y" * 500
    with pytest.raises(ContextFull, match="latest message needs 540 prompt tokens"):
        fit(msgs, OverflowPolicy.TRUNCATE_MIDDLE, budget=300, count=count)


def test_budget_leaves_room_for_the_reply() -> None:
    assert prompt_budget(4096, 512) == 3584
    assert prompt_budget(256, 512) == 128  # at most half the context is held back
    assert left_out_text(1) == "1 earlier message left out of the context"
    assert left_out_text(3) == "3 earlier messages left out of the context"
