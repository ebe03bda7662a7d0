"""Text files attached to a message: read with a size limit, sent as labelled blocks.

An attachment is stored in the message's ``meta["attachments"]`` (name, text)
and reaches the model as a fenced block labelled with the file name, before
the message's own text: the model sees which text came from which file, and
an edit request about the file finds the file's runs in the prompt (prompt
lookup drafts from them).

Only text is accepted: a file over :data:`MAX_BYTES`, one that is not UTF-8
(NUL bytes, undecodable), or a folder is refused with a sentence that says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES = 256 * 1024
TEXT_SUFFIXES = (
    ".txt", ".md", ".markdown", ".rst", ".py", ".js", ".ts", ".tsx", ".jsx", ".json", ".toml",
    ".yaml", ".yml", ".ini", ".cfg", ".c", ".h", ".cpp", ".hpp", ".cc", ".rs", ".go", ".java",
    ".kt", ".cs", ".rb", ".php", ".sh", ".sql", ".html", ".css", ".xml", ".csv", ".tex",
)
"""Offered by the file dialog; any other file is accepted too if it reads as text."""


class AttachmentError(ValueError):
    """A file that cannot be attached; the message says why."""


@dataclass(frozen=True)
class Attachment:
    name: str
    text: str

    def to_meta(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text}

    @classmethod
    def from_meta(cls, data: object) -> Attachment | None:
        if isinstance(data, dict) and isinstance(data.get("name"), str) \
                and isinstance(data.get("text"), str):
            return cls(data["name"], data["text"])
        return None


def read_attachment(path: str | Path, max_bytes: int = MAX_BYTES) -> Attachment:
    """The file as an attachment, or :class:`AttachmentError`."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise AttachmentError(f"{p.name} is a folder; attach the files in it one by one")
        if size > max_bytes:
            raise AttachmentError(
                f"{p.name} is {size / 1024:.0f} KiB; attachments are limited to "
                f"{max_bytes // 1024} KiB of text")
        raw = p.read_bytes()[: max_bytes + 1]
    except OSError as exc:
        raise AttachmentError(f"{p.name} cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in raw:
        raise AttachmentError(f"{p.name} is not a text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentError(f"{p.name} is not UTF-8 text") from None
    return Attachment(p.name, text.replace("\r\n", "\n"))


def attachments_of(meta: dict[str, Any]) -> list[Attachment]:
    """The attachments a stored message carries (bad entries are skipped)."""
    raw = meta.get("attachments")
    out = [Attachment.from_meta(a) for a in raw] if isinstance(raw, list) else []
    return [a for a in out if a is not None]


def block(attachment: Attachment) -> str:
    """The labelled block the model reads; the fence is longer than any run of backticks in it."""
    longest, run = 0, 0
    for ch in attachment.text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = attachment.text if attachment.text.endswith("\n") else attachment.text + "\n"
    return f"Attached file: {attachment.name}\n{fence}\n{body}{fence}"


def with_attachments(text: str, attachments: list[Attachment]) -> str:
    """A message's content as the model reads it: the files' blocks, then the text."""
    if not attachments:
        return text
    return "\n\n".join([*(block(a) for a in attachments), text])
