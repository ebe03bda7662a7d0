"""The chat page's own values survive a restart; a damaged file gives the defaults."""

from __future__ import annotations

from pathlib import Path

from specula.core.chat_session import ChatSession
from specula.core.settings import GenerationDefaults, SpeculativeDefaults


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    ChatSession(GenerationDefaults(max_tokens=60, temperature=0.7),
                SpeculativeDefaults(mode="chain", draft_max=6), side_panel_open=False).save(p)
    back = ChatSession.load(p)
    assert back.generation is not None and back.generation.max_tokens == 60
    assert back.generation.temperature == 0.7
    assert back.speculative is not None and back.speculative.draft_max == 6
    assert back.side_panel_open is False


def test_missing_or_damaged_file_gives_nothing(tmp_path: Path) -> None:
    assert ChatSession.load(tmp_path / "none.json") == ChatSession()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert ChatSession.load(bad) == ChatSession()
    odd = tmp_path / "odd.json"
    odd.write_text('{"generation": {"max_tokens": "many"}, "speculative": 3}', encoding="utf-8")
    s = ChatSession.load(odd)
    assert s.generation == GenerationDefaults() and s.speculative is None
