"""The benchmark's prompts: the packaged suite (or a JSONL file) with optional earlier
turns and a structured reply (a JSON schema, or tools) per line."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from specula.core import json_files


@dataclass
class BenchPrompt:
    id: str
    category: str
    prompt: str
    # A structured reply, as the OpenAI API asks for one: a JSON schema, or a tool call.
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    # Earlier messages of a multi-turn chat ({"role": "user" | "assistant" | "system",
    # "content": text}), sent before ``prompt``: the reply can repeat what they hold.
    turns: list[dict[str, str]] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.turns, {"role": "user", "content": self.prompt}]


def _turns(raw: object) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TypeError("'turns' must be a list of {role, content} messages")
    out = []
    for i, m in enumerate(raw, 1):
        if not (isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
                and isinstance(m.get("content"), str)):
            raise TypeError(f"turn {i} must be {{\"role\": system|user|assistant, \"content\": text}}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


def load_prompts(path: str | Path | None = None) -> list[BenchPrompt]:
    """JSONL lines ``{"id", "category", "prompt"}`` with optional ``"turns"`` (earlier
    messages of the chat), ``"response_format"`` or ``"tools"`` and ``"tool_choice"`` (a
    structured reply); the packaged suite by default."""
    if path is None:
        text = resources.files("specula.data").joinpath("prompts.jsonl").read_text("utf-8")
        name = "the default suite"
    else:
        text = Path(path).read_text("utf-8")
        name = str(path)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json_files.parse(line)  # bounded: a line of 100,000 "[" is a ValueError
            out.append(BenchPrompt(str(d["id"]), str(d.get("category", "")), str(d["prompt"]),
                                   response_format=d.get("response_format"), tools=d.get("tools"),
                                   tool_choice=d.get("tool_choice"), turns=_turns(d.get("turns"))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{name}, line {n}: expected {{id, category, prompt[, turns]}} ({exc})") from exc
    return out
