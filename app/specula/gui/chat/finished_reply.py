"""What a finished reply becomes, worked out without Qt: its text, footer and stored meta.

A reply may be written in parts (Continue goes on in the same message): its
text and token ids add up and its statistics merge, so the footer and the
stored message describe the whole reply. A regenerated reply keeps the
earlier versions in its meta (:mod:`specula.core.chat.versions`). The page
paints the result and hands the meta to the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specula.core import reply_stats
from specula.core.chat import versions
from specula.core.chat.conversations import Message
from specula.gui.chat.reply_notes import can_continue
from specula.gui.stats.footer import footer_text


@dataclass(frozen=True)
class FinishedReply:
    text: str  # the whole reply (a continued one with its first part)
    token_ids: list[int]
    stats: dict[str, Any]  # GenerationStats.to_dict(), merged over the parts
    stop_reason: str
    footer: str

    @property
    def can_continue(self) -> bool:
        return can_continue(self.stop_reason, bool(self.token_ids))


def finish(text: str, token_ids: list[int], stats: dict[str, Any], stop_reason: str,
           message: str = "", continuing: Message | None = None,
           paused: bool | None = None, held_back: bool = False, stopped: bool = False) -> FinishedReply:
    """The reply that just ended (``continuing``: the stored reply it went on from;
    ``paused``: the adaptive policy's verdict at its end, what the header shows, kept
    with the statistics so the footer says the same now and when the chat is reopened;
    ``held_back``: the verdict said the draft was not fed for this short answer, kept the
    same way so the footer says why the reply did not draft; ``stopped``: the verdict said the
    stop-loss ended its drafting, kept the same way)."""
    if continuing is not None:
        stats = reply_stats.merge(continuing.meta.get("stats"), stats)
        text = continuing.content + text
        token_ids = [*(continuing.meta.get("token_ids") or []), *token_ids]
    if paused is not None:
        stats = {**stats, "paused": paused}
    if held_back:
        stats = {**stats, "held_back": True}
    if stopped:
        stats = {**stats, "stopped": True}
    footer = footer_text(stats, stop_reason)
    if message:
        footer += f"\n{message}"
    return FinishedReply(text, list(token_ids), stats, stop_reason, footer)


def stored_meta(reply: FinishedReply, tokens: list[list[Any]], continuing: Message | None = None,
                earlier: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The meta the store keeps: statistics, stop reason, coloured tokens and token ids;
    a continued reply keeps its versions (the shown one rewritten), a regenerated one
    adds itself after the ``earlier`` versions."""
    meta: dict[str, Any] = {"stats": reply.stats, "stop_reason": reply.stop_reason,
                            "tokens": tokens, "token_ids": reply.token_ids}
    if continuing is not None:
        keep = {k: v for k, v in continuing.meta.items() if k in ("versions", "version")}
        meta = {**keep, **meta}
        if "versions" in meta:
            meta["versions"] = list(meta["versions"])
            meta["versions"][meta["version"]] = versions.snapshot(reply.text, meta)
    elif earlier:
        meta = versions.with_new_version(earlier, reply.text, meta)
    return meta


def shown_version(meta: dict[str, Any]) -> tuple[int, int]:
    """(the version shown, how many there are): (0, 1) for a reply never regenerated."""
    count = len(meta.get("versions") or []) or 1
    return int(meta.get("version", count - 1)), count
