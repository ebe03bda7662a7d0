"""Export: Markdown reads as the chat did, JSON round-trips what a program needs."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt

from specula.core.chat.conversations import Message
from specula.core.chat.export import to_json, to_markdown

MSGS = [
    Message(1, 1, 0, "user", "Write **hello**", 0.0, {}),
    Message(2, 1, 1, "assistant", "```python\nprint('hello')\n```", 1.0,
            {"stats": {"tokens": 9}, "stop_reason": "eos", "tokens": [["x", "d", 0.5]],
             "versions": [{"content": "older"}], "version": 1}),
]


def test_markdown_has_roles_text_and_stats() -> None:
    md = to_markdown("Greeting", MSGS, lambda s, r: f"{s['tokens']} tokens, {r}", exported_at=0)
    assert md.startswith("# Greeting\n")
    assert "## You\n\nWrite **hello**\n" in md
    assert "## Assistant\n\n```python\nprint('hello')\n```\n\n*9 tokens, eos*\n" in md
    # It parses back: two role headings and the code block intact.
    tokens = MarkdownIt().parse(md)
    assert [t.content for t in tokens if t.type == "inline" and t.map and t.level == 1][:3]
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == "print('hello')\n" and fences[0].info == "python"


def test_json_round_trips_and_leaves_tokens_out_by_default() -> None:
    data = json.loads(to_json("Greeting", MSGS, exported_at=5))
    assert data["format"] == "specula-conversation" and data["title"] == "Greeting"
    assert [(m["role"], m["content"]) for m in data["messages"]] == [(m.role, m.content) for m in MSGS]
    reply = data["messages"][1]
    assert reply["stats"] == {"tokens": 9} and reply["stop_reason"] == "eos"
    assert reply["versions"] == [{"content": "older"}] and "tokens" not in reply
    assert "tokens" in json.loads(to_json("g", MSGS, tokens=True))["messages"][1]
