"""Attached text files: limits, refusals, and the labelled block the model reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.chat.attachments import (
    Attachment,
    AttachmentError,
    attachments_of,
    block,
    read_attachment,
    with_attachments,
)


def test_a_text_file_becomes_a_labelled_block_before_the_text(tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    f.write_bytes(b"# Title\r\nline two\r\n")
    a = read_attachment(f)
    assert a == Attachment("notes.md", "# Title\nline two\n")
    content = with_attachments("Fix the title", [a])
    assert content == "Attached file: notes.md\n```\n# Title\nline two\n```\n\nFix the title"
    assert with_attachments("plain", []) == "plain"


def test_the_fence_is_longer_than_any_backticks_inside() -> None:
    text = block(Attachment("a.md", "````\ncode\n````"))
    assert text.splitlines()[1] == "`````" and text.endswith("\n`````")


@pytest.mark.parametrize("content, why", [
    (b"\x00\x01binary", "not a text file"),
    (b"\xff\xfe\xfa latin?", "not UTF-8"),
])
def test_non_text_files_are_refused(tmp_path: Path, content: bytes, why: str) -> None:
    f = tmp_path / "x.bin"
    f.write_bytes(content)
    with pytest.raises(AttachmentError, match=why):
        read_attachment(f)


def test_size_limit_and_folders(tmp_path: Path) -> None:
    f = tmp_path / "big.txt"
    f.write_text("a" * 2049)
    with pytest.raises(AttachmentError, match="limited to 2 KiB"):
        read_attachment(f, max_bytes=2048)
    assert read_attachment(f, max_bytes=4096).text == "a" * 2049
    with pytest.raises(AttachmentError, match="is a folder"):
        read_attachment(tmp_path)
    with pytest.raises(AttachmentError, match="cannot be read"):
        read_attachment(tmp_path / "missing.txt")


def test_stored_meta_round_trip_skips_bad_entries() -> None:
    meta = {"attachments": [Attachment("a.py", "x = 1\n").to_meta(), {"name": 3}, "junk"]}
    assert attachments_of(meta) == [Attachment("a.py", "x = 1\n")]
    assert attachments_of({}) == []
