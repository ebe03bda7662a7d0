"""Control characters from the hub never reach the terminal raw (before: `models files`
printed clear-screen and set-title escapes from file names and the model card)."""

from __future__ import annotations

import pytest

from specula.cli import main
from specula.core.hub.client import HubClient
from specula.core.safe_text import display_text, has_unsafe
from tests.fixtures.fake_hub import FakeHub

EVIL_REPO = "evil/Escapes-GGUF"
CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;pwned\x07"
CSI_C1 = "\x9b31m"
RLO = "\u202e"
CARD = (f"---\ntags: [gguf]\n---\n\n# Title\n\nA perfectly normal model {CLEAR}card{TITLE} "
        f"with {CSI_C1}colour and {RLO}reversed text, long enough to be a description.\n")
RAW = ("\x1b", "\x07", "\x9b", RLO)


@pytest.fixture
def evil_hub(fake_hub: FakeHub, tiny: dict[str, object]) -> FakeHub:
    data = tiny["target"].read_bytes()  # type: ignore[attr-defined]
    fake_hub.add_repo(EVIL_REPO, {
        "good-q4_k_m.gguf": data,
        f"clear{CLEAR}-q8_0.gguf": data,
        f"title{TITLE}.gguf": data,
        f"c1{CSI_C1}.gguf": data,
        f"rtl{RLO}fuggu.gguf": data,
        f"notes{TITLE}.txt": b"x",
        "README.md": CARD.encode(),
    }, tags=["gguf", f"tag{CLEAR}"], downloads=10)
    return fake_hub


def test_models_files_and_search_print_no_raw_escapes(evil_hub: FakeHub,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["models", "files", EVIL_REPO], ["models", "files", EVIL_REPO, "--json"],
                 ["models", "search", "Escapes"], ["models", "search", "Escapes", "--json"]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        for ch in RAW:
            assert ch not in out and ch not in err, (argv, ch)
    main(["models", "files", EVIL_REPO])
    out, _ = capsys.readouterr()
    assert "good-q4_k_m.gguf" in out and "A perfectly normal model" in out


def test_the_core_exposes_display_safe_results(evil_hub: FakeHub) -> None:
    hub = HubClient()
    listing = hub.list_files(EVIL_REPO)
    assert [m.filename for m in listing.models] == ["good-q4_k_m.gguf"]  # hostile names not offered
    assert listing.description is not None and not has_unsafe(listing.description)
    assert "\\x1b[2J" in listing.description  # shown as a visible escape, not dropped silently
    (found,) = hub.search("Escapes")
    assert all(not has_unsafe(t) for t in found.tags) and "tag\\x1b[2J\\x1b[H" in found.tags


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain name.gguf", "plain name.gguf"),
    ("a\x1b[2Jb", "a\\x1b[2Jb"),
    ("bell\x07", "bell\\x07"),
    ("c1\x9b", "c1\\x9b"),
    ("del\x7f", "del\\x7f"),
    ("rtl\u202eabc", "rtl\\u202eabc"),
    ("isolate\u2066x\u2069", "isolate\\u2066x\\u2069"),
    ("line\nbreak", "line\\x0abreak"),
    ("ünïcode 模型 ok", "ünïcode 模型 ok"),
])
def test_display_text(raw: str, shown: str) -> None:
    assert display_text(raw) == shown
    assert not has_unsafe(display_text(raw))


def test_card_html_never_reaches_a_label_as_rich_text() -> None:
    from PySide6.QtGui import Qt  # mightBeRichText lives in QtGui

    from specula.core.hub.client import description_from_card

    card = ("A model by <a href='https://x'>Someone</a><br> with an <img src='/etc/passwd'> "
            "image and a < b comparison, <b>long</b> enough to be a description.")
    text = description_from_card(card)
    assert text is not None and "Someone" in text and "<" not in text
    assert not Qt.mightBeRichText(text)
