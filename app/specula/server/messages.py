"""Chat messages of a request -> the dicts the chat template renders.

Besides ``role`` and ``content``, an assistant message may carry ``tool_calls`` and a
``tool`` message answers one (``tool_call_id``, ``name``). Templates written for
Transformers (Qwen2.5's among them) render a call's arguments with ``| tojson`` and
expect an object, while the OpenAI API sends them as JSON text: they are parsed here
(text that is not JSON stays text), as vLLM and llama.cpp's server do. Arguments that nest
deeper than a request body may (``limits.MAX_DEPTH``) are a 400 naming the field, checked
before ``json.loads``, whose parser recurses once per level.
"""

from __future__ import annotations

import json
from typing import Any

from specula.server.errors import bad
from specula.server.limits import MAX_DEPTH, nesting_depth

ROLES = ("system", "user", "assistant", "tool", "developer")


def _content(msg: dict[str, Any], i: int) -> str:
    content = msg.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only text is understood
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" \
                    or not isinstance(part.get("text"), str):
                raise bad(f"messages[{i}].content", "Only text content parts are supported.")
            texts.append(part["text"])
        return "".join(texts)
    raise bad(f"messages[{i}].content", "'content' must be a string or a list of text parts.",
              "invalid_type")


def _arguments(text: str, param: str) -> Any:
    too_deep = bad(param, f"'{param}' nests deeper than {MAX_DEPTH} levels.")
    if text.count("[") + text.count("{") > MAX_DEPTH \
            and nesting_depth(text.encode("utf-8", "surrogatepass"), MAX_DEPTH) > MAX_DEPTH:
        raise too_deep
    try:
        return json.loads(text)
    except ValueError:
        return text
    except RecursionError:  # not reached past the depth check; kept so it can never be a 500
        raise too_deep from None


def _tool_calls(calls: Any, i: int) -> list[dict[str, Any]]:
    p = f"messages[{i}].tool_calls"
    if not isinstance(calls, list):
        raise bad(p, f"'{p}' must be a list of tool calls.", "invalid_type")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise bad(f"{p}[{j}]", f"'{p}[{j}]' must be {{\"id\", \"type\": \"function\", "
                      "\"function\": {\"name\", \"arguments\"}}.", "invalid_type")
        args = fn.get("arguments", "{}")
        if not isinstance(args, (str, dict)):
            raise bad(f"{p}[{j}].function.arguments", "'arguments' must be JSON text.",
                      "invalid_type")
        cid = call.get("id")
        if cid is not None and not isinstance(cid, str):
            raise bad(f"{p}[{j}].id", "'id' must be a string.", "invalid_type")
        out.append({"id": cid or f"call_{i}_{j}", "type": "function",
                    "function": {"name": fn["name"], "arguments": _arguments(
                        args, f"{p}[{j}].function.arguments") if isinstance(args, str) else args}})
    return out


def parse_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = body.get("messages")
    if msgs is None:
        raise bad("messages", "'messages' is required.", "missing_required_parameter")
    if not isinstance(msgs, list) or not msgs:
        raise bad("messages", "'messages' must be a non-empty list.", "invalid_type")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(msgs):
        if not isinstance(msg, dict):
            raise bad(f"messages[{i}]", "Each message must be an object.", "invalid_type")
        role = msg.get("role")
        if role not in ROLES:
            raise bad(f"messages[{i}].role", f"'role' must be one of {', '.join(ROLES)}.")
        m: dict[str, Any] = {"role": "system" if role == "developer" else str(role),
                             "content": _content(msg, i)}
        if role == "assistant" and msg.get("tool_calls"):
            m["tool_calls"] = _tool_calls(msg["tool_calls"], i)
        if role == "tool":
            for key in ("tool_call_id", "name"):
                value = msg.get(key)
                if value is not None and not isinstance(value, str):
                    raise bad(f"messages[{i}].{key}", f"'{key}' must be a string.", "invalid_type")
                if value is not None:
                    m[key] = value
        out.append(m)
    return out
