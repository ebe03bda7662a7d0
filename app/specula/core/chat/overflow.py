"""What a chat sends when the conversation no longer fits the context: the overflow policy.

Applied to the role/content messages before the prompt is built, as LM Studio
offers it:

* ``stop``: nothing is left out; a conversation over the budget is refused
  with :class:`ContextFull` (the user deletes messages or starts a new chat);
* ``truncate_middle`` (the default): the system prompt and the first exchange
  (first user message and its reply) stay, the oldest turns after them are
  left out, the latest turns stay;
* ``rolling_window``: the system prompt stays, the oldest turns are left out.

Turns (a user message and what follows it up to the next user message) are
left out whole, so roles still alternate for templates that insist on it. The
latest turn is never left out; if it cannot fit even alone, :class:`ContextFull`
says so.

Leaving out is *sticky and in steps*: ``keep_out`` (what the previous reply
left out) is left out again, and a new overflow frees ``slack`` of the budget
at once. The prompt then keeps the same beginning for several turns, so the
engine's KV cache (which reuses the longest common prefix) only re-reads the
new turn, not the whole conversation after every message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

ChatMessage = dict[str, str]
Counter = Callable[[Sequence[ChatMessage]], int]
"""The prompt tokens of a list of messages, as the model's chat template builds them."""


class OverflowPolicy(str, Enum):
    STOP = "stop"
    TRUNCATE_MIDDLE = "truncate_middle"
    ROLLING_WINDOW = "rolling_window"

    @property
    def label(self) -> str:
        return POLICY_LABELS[self]


POLICY_LABELS = {
    OverflowPolicy.STOP: "Stop at the limit",
    OverflowPolicy.TRUNCATE_MIDDLE: "Truncate middle",
    OverflowPolicy.ROLLING_WINDOW: "Rolling window",
}
DEFAULT_POLICY = OverflowPolicy.TRUNCATE_MIDDLE
DEFAULT_SLACK = 0.25


def policy_from(value: object) -> OverflowPolicy:
    """A stored policy name read back; anything unknown is the default (fail soft on old rows)."""
    try:
        return OverflowPolicy(str(value))
    except ValueError:
        return DEFAULT_POLICY


class ContextFull(Exception):
    """The messages cannot be sent within the budget under this policy (a sentence for the user)."""


@dataclass(frozen=True)
class Fitted:
    messages: list[ChatMessage]
    """What to send: the kept messages in their order."""
    left_out: int
    """How many messages were left out (0: the whole conversation is sent)."""
    tokens: int
    """The prompt tokens of :attr:`messages` (the counter's figure)."""
    start: int = 0
    """The index (in the messages given) of the first one left out: they are consecutive."""


def reply_room(n_ctx: int, max_tokens: int) -> int:
    """Tokens kept free for the reply: its max_tokens, at most half the context."""
    return max(1, min(max_tokens, n_ctx // 2))


def prompt_budget(n_ctx: int, max_tokens: int) -> int:
    """The most prompt tokens a reply may start from."""
    return n_ctx - reply_room(n_ctx, max_tokens)


def _turns(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    turns: list[list[ChatMessage]] = []
    for m in messages:
        if m.get("role") == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def fit(messages: Sequence[ChatMessage], policy: OverflowPolicy, budget: int, count: Counter,
        *, keep_out: int = 0, slack: float = DEFAULT_SLACK) -> Fitted:
    """The messages to send so that their prompt is at most ``budget`` tokens.

    ``keep_out``: messages the previous reply left out (left out again, so the
    prompt's beginning does not move). Raises :class:`ContextFull` when the
    policy is ``stop`` and the conversation is over the budget, or when the
    kept head and the latest turn alone are over it.
    """
    msgs = list(messages)
    n_sys = 0
    while n_sys < len(msgs) and msgs[n_sys].get("role") == "system":
        n_sys += 1
    system, turns = msgs[:n_sys], _turns(msgs[n_sys:])
    if policy is OverflowPolicy.STOP or len(turns) <= 1:
        n = count(msgs)
        if n > budget:
            raise ContextFull(_full_text(n, budget, policy))
        return Fitted(msgs, 0, n)
    heads = [1, 0] if policy is OverflowPolicy.TRUNCATE_MIDDLE and len(turns) > 2 else [0]
    for head_turns in heads:
        head, middle, last = turns[:head_turns], turns[head_turns:-1], turns[-1]

        first = n_sys + sum(len(t) for t in head)

        def build(drop: int, head: list[list[ChatMessage]] = head,
                  middle: list[list[ChatMessage]] = middle,
                  last: list[ChatMessage] = last) -> list[ChatMessage]:
            kept = [m for t in (*head, *middle[drop:]) for m in t]
            return [*system, *kept, *last]

        # The fewest whole turns that cover what was left out before.
        start, dropped = 0, 0
        while start < len(middle) and dropped < keep_out:
            dropped += len(middle[start])
            start += 1
        kept = build(start)
        n = count(kept)
        if n <= budget:
            return Fitted(kept, len(msgs) - len(kept), n, first)
        # A new overflow: leave out the fewest more turns that bring the prompt to
        # (1 - slack) of the budget, found by bisection (the count grows with the turns kept).
        target = int(budget * (1.0 - slack))
        lo, hi = start + 1, len(middle)
        n_hi = count(build(hi))
        if n_hi > budget:
            continue  # even every middle turn left out is too long: try without the head
        while lo < hi:
            mid = (lo + hi) // 2
            if count(build(mid)) <= target:
                hi = mid
            else:
                lo = mid + 1
        kept = build(hi)
        n = count(kept) if hi != len(middle) else n_hi
        if n > budget:  # the target was unreachable; the bisection ended at the last turn
            kept, n = build(len(middle)), n_hi
        return Fitted(kept, len(msgs) - len(kept), n, first)
    n = count([*system, *turns[-1]])
    raise ContextFull(
        f"The latest message needs {n} prompt tokens, more than the {budget} this context "
        f"leaves for the prompt. Shorten it, detach a file or load the model with a longer "
        f"context.")


def _full_text(n: int, budget: int, policy: OverflowPolicy) -> str:
    if policy is OverflowPolicy.STOP:
        return (f"The conversation needs {n} prompt tokens, more than the {budget} this context "
                f"leaves for the prompt, and its overflow policy is \"Stop at the limit\". Delete "
                f"messages, branch a new chat, or choose \"Truncate middle\".")
    return (f"The message needs {n} prompt tokens, more than the {budget} this context leaves "
            f"for the prompt. Shorten it, detach a file or load the model with a longer context.")


def left_out_text(n: int) -> str:
    """What the chat shows above the kept messages."""
    return f"{n} earlier message{'s' if n != 1 else ''} left out of the context"
