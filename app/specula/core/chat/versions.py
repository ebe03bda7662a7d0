"""Earlier versions of a regenerated reply, kept in the reply's meta (LM Studio's "< 2/3 >").

Regenerating replaces the reply in the conversation, but the user may prefer
an earlier one. Each version is what a reply's meta describes (its content,
statistics, stop reason, tokens); the message row holds the shown version's
fields at the top level plus ``versions`` (all of them, oldest first) and
``version`` (the index shown). Plain functions over dicts: the store saves
the result with ``update_message``/``add_message``.
"""

from __future__ import annotations

from typing import Any

VERSION_FIELDS = ("stats", "stop_reason", "tokens", "token_ids")


def snapshot(content: str, meta: dict[str, Any]) -> dict[str, Any]:
    """One version from a message's content and meta."""
    return {"content": content, **{k: meta[k] for k in VERSION_FIELDS if k in meta}}


def history(content: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Every version of a message so far (the shown one included)."""
    versions = meta.get("versions")
    if isinstance(versions, list) and versions:
        shown = meta.get("version", len(versions) - 1)
        out = [dict(v) for v in versions if isinstance(v, dict)]
        if isinstance(shown, int) and 0 <= shown < len(out):
            out[shown] = snapshot(content, meta)  # the row is the truth for the shown one
        return out
    return [snapshot(content, meta)]


def with_new_version(earlier: list[dict[str, Any]], content: str,
                     meta: dict[str, Any]) -> dict[str, Any]:
    """The meta of a new reply that keeps ``earlier`` versions; the new one is shown."""
    versions = [*earlier, snapshot(content, meta)]
    return {**meta, "versions": versions, "version": len(versions) - 1}


def select(meta: dict[str, Any], index: int) -> tuple[str, dict[str, Any]]:
    """Content and meta with version ``index`` shown (clamped to the ones that exist)."""
    versions = [v for v in meta.get("versions", []) if isinstance(v, dict)]
    if not versions:
        raise ValueError("this message has no earlier versions")
    index = min(max(index, 0), len(versions) - 1)
    chosen = versions[index]
    out = {k: v for k, v in meta.items() if k not in VERSION_FIELDS}
    out.update({k: chosen[k] for k in VERSION_FIELDS if k in chosen})
    out["version"] = index
    return str(chosen.get("content", "")), out
