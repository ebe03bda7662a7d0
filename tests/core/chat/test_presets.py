"""Presets: saved, listed, exported and imported as JSON; bad files refused whole."""

from __future__ import annotations

import json

import pytest

from specula.core.chat import presets
from specula.core.chat.presets import Preset, PresetError


def test_shipped_presets_each_say_what_they_do_to_speculation() -> None:
    names = [p.name for p in presets.SHIPPED]
    assert "Code, greedy" in names and "Creative" in names
    for p in presets.SHIPPED:
        assert p.speculation and p.mode in presets.MODES
        assert Preset.from_dict(p.to_dict()).values == p.values  # each passes its own checks


def test_save_export_import_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mine = Preset("Mine", "Be brief.", "lookup", {"temperature": 0.3, "max_tokens": 64,
                                                  "draft_max": 5}, "lookup only")
    presets.save(mine)
    assert presets.find("Mine") == mine
    text = presets.export_json(mine)
    assert json.loads(text)["format"] == "specula-preset"
    presets.delete("Mine")
    assert presets.find("Mine") is None
    [back] = presets.import_json(text)
    assert back == mine


def test_a_user_preset_replaces_a_shipped_one_of_that_name() -> None:
    presets.save(Preset("Creative", "Mine now", "chain", {"temperature": 1.5}))
    found = [p for p in presets.all_presets() if p.name == "Creative"]
    assert len(found) == 1 and found[0].system_prompt == "Mine now" and not found[0].shipped


@pytest.mark.parametrize("bad, why", [
    ({"name": "x", "values": {"temperature": 9}}, "outside"),
    ({"name": "x", "values": {"top_k": 1.5}}, "whole number"),
    ({"name": "x", "values": {"temperature": "hot"}}, "must be a number"),
    ({"name": "x", "values": {"temperature": True}}, "must be a number"),
    ({"name": "x", "values": {"warp": 1}}, "unknown setting"),
    ({"name": "x", "mode": "warp"}, "mode"),
    ({"name": ""}, "name"),
    ([1, 2], "JSON object"),
])
def test_bad_presets_are_refused_with_a_reason(bad: object, why: str) -> None:
    with pytest.raises(PresetError, match=why):
        presets.import_json(json.dumps(bad))


def test_a_file_with_one_bad_preset_imports_nothing() -> None:
    text = json.dumps({"presets": [{"name": "ok"}, {"name": "bad", "values": {"seed": -5}}]})
    with pytest.raises(PresetError, match="seed"):
        presets.import_json(text)
    assert presets.load_user() == []


def test_a_damaged_presets_file_gives_the_shipped_ones() -> None:
    from specula.core import paths

    (paths.config_dir() / presets.FILE_NAME).write_text("{not json", encoding="utf-8")
    assert [p.name for p in presets.all_presets()] == [p.name for p in presets.SHIPPED]
