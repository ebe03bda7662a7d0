"""File names and header text reach the terminal escaped, and a loop of links is one
unreadable entry (issue 46, defect 10).

Before: a ``*.gguf`` symlink loop crashed the library scan (``RuntimeError: Symlink
loop``: ``core/library/scan.py`` caught only OSError) in ``specula models list`` and
My Models; a file name holding escape sequences was printed raw, setting the
terminal's title and clearing the screen.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gguf import GGUFValueType as T

from specula.cli import main
from specula.commands._common import terminal_text
from specula.core.library.scan import Library
from specula_tools.crafted_gguf import base_fields, header_bytes, with_field

TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title
CLEAR = "\x1b[2J"  # clears the screen
C1_CSI = "\x9b2J"  # the one-byte CSI some terminals obey
BIDI = "\u202e"  # right-to-left override
EVIL_NAME = f"evil{TITLE}{CLEAR}{C1_CSI}{BIDI}.gguf"


def _controls(text: str) -> list[str]:
    """The characters a terminal would act on (independent of the code under test)."""
    return [ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) < 0xA0
            or ch == BIDI]


def test_terminal_text_shows_every_control_as_an_escape() -> None:
    shown = terminal_text(f"a{TITLE}b\n\tc{C1_CSI}{BIDI}")
    assert _controls(shown) == []
    assert shown == "a\\x1b]0;pwned\\x07b\n\tc\\x9b2J\\u202e"


def _models_dir(specula_home: Path) -> Path:
    folder = specula_home / "models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_models_list_escapes_file_names(specula_home: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (_models_dir(specula_home) / EVIL_NAME).write_bytes(header_bytes(base_fields()))
    assert main(["models", "list"]) == 0
    out, err = capsys.readouterr()
    assert _controls(out + err) == [], repr(out)
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\u202e.gguf" in out


def test_info_escapes_header_text_and_names(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fields = with_field(base_fields(), "tokenizer.ggml.model", T.STRING, f"gpt2{TITLE}")
    fields = with_field(fields, "tokenizer.ggml.pre", T.STRING, f"x{CLEAR}")
    good = tmp_path / EVIL_NAME
    good.write_bytes(header_bytes(fields))
    assert main(["info", str(good)]) == 0
    out, _err = capsys.readouterr()
    assert _controls(out) == [] and "gpt2\\x1b]0;pwned\\x07" in out
    bad = tmp_path / f"bad{TITLE}.gguf"
    bad.write_bytes(b"not a gguf at all, but long enough to be read")
    assert main(["info", str(bad)]) == 2
    _out, err = capsys.readouterr()
    assert _controls(err) == [] and err.startswith("specula: error: ")


@pytest.mark.parametrize("kind", ["self", "pair", "dangling"])
def test_a_loop_of_links_is_skipped_by_the_scan(kind: str, specula_home: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    models = _models_dir(specula_home)
    (models / "real.gguf").write_bytes(header_bytes(base_fields()))
    if kind == "self":
        os.symlink("loop.gguf", models / "loop.gguf")
    elif kind == "pair":
        os.symlink("b.gguf", models / "a.gguf")
        os.symlink("a.gguf", models / "b.gguf")
    else:
        os.symlink("nowhere.gguf", models / "gone.gguf")
    scan = Library(models, index_path=specula_home / "index.json").scan()
    assert [m.name for m in scan.models] == ["real.gguf"]
    assert main(["models", "list"]) == 0
    out, _err = capsys.readouterr()
    assert "real.gguf" in out
    if kind != "dangling":  # asking for the loop by name: a clear refusal, no traceback
        assert main(["models", "rm", "loop.gguf" if kind == "self" else "a.gguf"]) == 2
        _out, err = capsys.readouterr()
        assert err.startswith("specula: error: ") and "Traceback" not in err
