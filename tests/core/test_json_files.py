"""Every JSON file Specula reads goes through one bounded reader; a file it cannot use is
set aside with a notice and the defaults apply (issue 46, defect 7).

Before: ``config/settings.json`` of 100,000 ``[`` exited 1 with RecursionError though
``Settings.load()`` "never fails"; ``presets.json`` nested that deep, or a preset with
``top_k`` NaN or Infinity, aborted; ``chat-session.json`` nested deep aborted; the other
loaders shared ``except (OSError, ValueError)`` and let RecursionError through.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from specula.core import json_files, paths
from specula.core.chat import presets
from specula.core.chat.presets import PresetError
from specula.core.chat_session import ChatSession
from specula.core.engine.policy import state as policy_state
from specula.core.engine.policy.acceptance_model import AcceptanceModel
from specula.core.engine.policy.cost_model import CostModel
from specula.core.hub.download_records import load_records
from specula.core.hub.partial_files import Sidecar
from specula.core.library.index import LibraryIndex
from specula.core.library.load_defaults import defaults_for
from specula.core.settings import Settings

DEEP = "[" * 100_000


# -- the reader ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "depth"), [
    ("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[[", "]]"]', 1),
    ('{"k": "\\"[[["}', 1), ("[" * 40 + "]" * 40, 40)])
def test_nesting_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert json_files.nesting_depth(text, 100) == depth
    # the same figure by Python's own parser, counted on the value it builds
    def measured(v: object) -> int:
        if isinstance(v, list):
            return 1 + max((measured(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((measured(x) for x in v.values()), default=0)
        return 0
    assert measured(json.loads(text)) == depth


@pytest.mark.parametrize("text", [DEEP, "[" * 33 + "]" * 33, '{"a":' * 50 + "1" + "}" * 50])
def test_too_deep_is_a_json_error(text: str) -> None:
    with pytest.raises(json_files.JsonError, match="nested more than 32 levels"):
        json_files.parse(text)


def test_the_limits_hold_at_their_edge() -> None:
    assert json_files.parse("[" * 32 + "]" * 32) is not None
    assert json_files.parse(b"[1]", max_bytes=3) == [1]
    with pytest.raises(json_files.JsonError, match="larger than 3 bytes"):
        json_files.parse(b"[10]", max_bytes=3)


@pytest.mark.parametrize("data", [b"\xff\xfe\x00", b"{oops", b"", "[1,]"])
def test_what_is_not_json_is_a_json_error(data: str | bytes) -> None:
    with pytest.raises(json_files.JsonError):
        json_files.parse(data)


def test_utf16_and_a_bom_are_read_as_json_loads_reads_them() -> None:
    value = {"name": "é"}
    for data in (json.dumps(value).encode("utf-16"), b"\xef\xbb\xbf" + json.dumps(value).encode()):
        assert json_files.parse(data) == json.loads(data) == value


def test_a_file_over_the_size_bound_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"x": "y" * 2000}))
    loaded = json_files.load(json_files.JsonFile(path, "test file", max_bytes=1000))
    assert loaded.value is None and loaded.notice and "larger than 1,000 bytes" in loaded.notice
    assert not path.exists() and len(list(tmp_path.glob("big.json.bad-*"))) == 1


# -- every loader --------------------------------------------------------------------

def _settings() -> object:
    s = Settings.load()
    assert s == Settings() and s.load_notice and "settings file" in s.load_notice
    return s


def _presets() -> object:
    user = presets.load_user()
    assert user == [] and [p.name for p in presets.all_presets()] == [p.name for p in presets.SHIPPED]
    return user


def _session() -> object:
    s = ChatSession.load()
    assert s == ChatSession()
    return s


def _model_defaults() -> object:
    d = defaults_for("model.gguf")
    assert d.is_empty()
    return d


def _index() -> object:
    index = LibraryIndex()
    assert index.entries == {}
    return index


def _downloads() -> object:
    records = load_records(models_dir=paths.default_models_dir())
    assert records == []
    return records


# file (under SPECULA_HOME) -> the loader, which checks that the defaults came back
LOADERS: dict[str, tuple[str, Callable[[], object]]] = {
    "settings": ("config/settings.json", _settings),
    "presets": ("config/presets.json", _presets),
    "chat session": ("config/chat-session.json", _session),
    "model defaults": ("config/model_defaults.json", _model_defaults),
    "library index": ("data/library-index.json", _index),
    "downloads": ("data/downloads.json", _downloads),
}
BAD_FILES = {
    "deep": DEEP,
    "deep object": '{"a":' * 100_000,
    "not json": "{oops",
    "a list": "[1, 2, 3]",
}


@pytest.mark.parametrize("bad", sorted(BAD_FILES))
@pytest.mark.parametrize("which", sorted(LOADERS))
def test_every_loader_sets_a_bad_file_aside_and_uses_its_defaults(
        which: str, bad: str, specula_home: Path) -> None:
    rel, loader = LOADERS[which]
    path = specula_home / rel
    paths.config_dir(), paths.data_dir()  # the folders exist
    path.write_text(BAD_FILES[bad], encoding="utf-8")
    json_files.take_notices()
    loader()  # checks the defaults itself
    assert not path.exists(), "the bad file is moved out of the way"
    [aside] = path.parent.glob(path.name + ".bad-*")
    assert aside.read_text(encoding="utf-8") == BAD_FILES[bad], "and kept as it was"
    if which != "settings":  # the settings' own notice is shown by the app (load_notice)
        [notice] = json_files.take_notices()
        assert str(aside) in notice


@pytest.mark.parametrize("which", sorted(LOADERS))
def test_a_missing_file_is_no_notice(which: str, specula_home: Path) -> None:
    json_files.take_notices()
    rel, _loader = LOADERS[which]
    assert not (specula_home / rel).exists()
    if which == "settings":
        assert Settings.load().load_notice is None
    else:
        LOADERS[which][1]()
    assert json_files.take_notices() == []


@pytest.mark.parametrize("content", [
    '{"presets": 5}', '{"presets": "abc"}'])
def test_a_presets_file_of_the_wrong_shape_is_set_aside(content: str, specula_home: Path) -> None:
    path = paths.config_dir() / presets.FILE_NAME
    path.write_text(content)
    assert presets.load_user() == []
    assert not path.exists() and list(path.parent.glob("presets.json.bad-*"))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_preset_with_a_non_finite_value_is_skipped_not_fatal(value: str,
                                                               specula_home: Path) -> None:
    path = paths.config_dir() / presets.FILE_NAME
    path.write_text('{"presets": [{"name": "bad", "values": {"top_k": VALUE}}, '
                    '{"name": "bad too", "values": {"temperature": VALUE}}, '
                    '{"name": "good", "values": {"top_k": 5}}]}'.replace("VALUE", value))
    assert [p.name for p in presets.load_user()] == ["good"]
    with pytest.raises(PresetError, match="top_k must be a number"):
        presets.import_json('{"name": "x", "values": {"top_k": ' + value + "}}")


def test_importing_a_deep_file_is_a_preset_error() -> None:
    with pytest.raises(PresetError, match="nested more than"):
        presets.import_json(DEEP)


def test_a_deep_chat_session_keeps_the_panel_on_its_defaults(specula_home: Path) -> None:
    path = ChatSession.path()
    path.write_text('{"generation": ' + DEEP)
    assert ChatSession.load() == ChatSession()


def test_a_deep_sidecar_is_not_resumed(tmp_path: Path) -> None:
    side = tmp_path / "m.gguf.part.json"
    side.write_text(DEEP)
    assert Sidecar.load(side) is None
    side.write_text('{"repo_id": "a/b", "filename": "m.gguf", "size": "big", "sha256": null}')
    assert Sidecar.load(side) is None


def test_a_deep_policy_state_is_discarded(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(DEEP)
    assert policy_state.load_into(path, CostModel(), AcceptanceModel()) is None


def test_download_entries_of_the_wrong_kind_are_dropped(specula_home: Path) -> None:
    path = paths.data_dir() / "downloads.json"
    good = {"repo_id": "a/b", "filename": "m.gguf", "size": 10, "state": "done",
            "message": "", "downloaded": 10, "path": ""}
    path.write_text(json.dumps({"version": 1, "downloads": [
        good, {**good, "filename": "n.gguf", "downloaded": "lots"},
        {**good, "filename": "o.gguf", "size": [1]}, {**good, "filename": 7}]}))
    assert [r.filename for r in load_records(models_dir=paths.default_models_dir())] == ["m.gguf"]


def test_a_deep_bench_prompts_line_is_a_clear_error(tmp_path: Path) -> None:
    from specula.core.bench.prompts import load_prompts

    path = tmp_path / "prompts.jsonl"
    path.write_text('{"id": "a", "prompt": "hi"}\n' + DEEP + "\n")
    with pytest.raises(ValueError, match=r"line 2: .*nested more than"):
        load_prompts(path)
