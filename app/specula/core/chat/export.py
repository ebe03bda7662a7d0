"""A conversation as Markdown (to read or paste) or JSON (to keep or process).

LM Studio exports chats both ways; so do we. Markdown gives each message a
heading with its role and, under a reply, its statistics line in italics (the
caller passes the formatter, so the numbers read as in the app). JSON keeps
everything a program needs: roles, texts, statistics, stop reasons and the
earlier versions of regenerated replies; token colouring with ``tokens=True``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from specula.core.chat.conversations import Message

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System"}
FORMAT_VERSION = 1

StatsLine = Callable[[dict[str, Any], str], str]


def to_markdown(title: str, messages: Sequence[Message], stats_line: StatsLine | None = None,
                exported_at: float | None = None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(exported_at or time.time()))
    out = [f"# {title.strip() or 'Conversation'}", "", f"*Exported from Specula on {when}*", ""]
    for m in messages:
        out += [f"## {ROLE_TITLES.get(m.role, m.role.title())}", "", m.content.rstrip(), ""]
        stats = m.meta.get("stats")
        if stats_line is not None and isinstance(stats, dict):
            out += [f"*{stats_line(stats, str(m.meta.get('stop_reason', '')))}*", ""]
    return "\n".join(out).rstrip() + "\n"


def to_dict(title: str, messages: Sequence[Message], tokens: bool = False,
            exported_at: float | None = None) -> dict[str, Any]:
    keep = {"stats", "stop_reason", "versions", "version"} | ({"tokens"} if tokens else set())
    return {
        "format": "specula-conversation",
        "format_version": FORMAT_VERSION,
        "title": title,
        "exported_at": exported_at or time.time(),
        "messages": [
            {"role": m.role, "content": m.content, "created": m.created,
             **{k: v for k, v in m.meta.items() if k in keep}}
            for m in messages
        ],
    }


def to_json(title: str, messages: Sequence[Message], tokens: bool = False,
            exported_at: float | None = None) -> str:
    return json.dumps(to_dict(title, messages, tokens, exported_at), indent=2, ensure_ascii=False)
