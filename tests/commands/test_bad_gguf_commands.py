"""Every command that reads a header answers a hostile GGUF with one clear line, exit 2.

The crafted files (built here, byte by byte) gave ValueError, OverflowError or
RecursionError tracebacks from ``info``, ``compat``, ``chat``, ``serve``,
``models files --headers`` and ``models fit`` before.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from gguf import GGUFValueType as T

from specula.cli import main
from specula_tools.crafted_gguf import (
    Array,
    base_fields,
    header_bytes,
    nested_array_bytes,
    with_field,
)
from tests.fixtures.fake_hub import FakeHub

CRAFTED = {
    "nan-context.gguf": header_bytes(with_field(base_fields(), "llama.context_length", T.FLOAT32, math.nan)),
    "inf-bos.gguf": header_bytes(with_field(base_fields(), "tokenizer.ggml.bos_token_id", T.FLOAT64, math.inf)),
    "text-types.gguf": header_bytes(with_field(
        base_fields(), "tokenizer.ggml.token_type", T.ARRAY, Array(T.STRING, ["x"] * 16))),
    "nested.gguf": header_bytes([*base_fields(), ("x", T.ARRAY, None)],
                                raw_values={"x": nested_array_bytes(5_000)}),
}
SAYS = {
    "nan-context.gguf": "llama.context_length should be an integer, found nan",
    "inf-bos.gguf": "tokenizer.ggml.bos_token_id should be an integer, found inf",
    "text-types.gguf": "tokenizer.ggml.token_type should be an integer, found 'x'",
    "nested.gguf": "arrays nested more than 8 deep in x",
}


@pytest.fixture
def crafted(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, data in CRAFTED.items():
        out[name] = tmp_path / name
        out[name].write_bytes(data)
    return out


def _commands(bad: Path, good: Path) -> dict[str, list[str]]:
    return {
        "info": ["info", str(bad)],
        "compat target": ["compat", str(bad), str(good)],
        "compat draft": ["compat", str(good), str(bad)],
        "chat": ["chat", "--model", str(bad)],
        "serve": ["serve", "--model", str(bad), "--port", "0"],
        "models fit": ["models", "fit", str(bad)],
    }


@pytest.mark.parametrize("name", sorted(CRAFTED))
@pytest.mark.parametrize("command", ["info", "compat target", "compat draft", "chat", "serve",
                                     "models fit"])
def test_local_commands_print_one_clear_line(name: str, command: str, crafted: dict[str, Path],
                                             tiny: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    code = main(_commands(crafted[name], tiny["target"])[command])
    _out, err = capsys.readouterr()
    assert code == 2, err
    assert SAYS[name] in err and "Traceback" not in err
    assert any(line.startswith("specula: error:") and SAYS[name] in line for line in err.splitlines())


def test_models_files_headers_reports_each_bad_header(fake_hub: FakeHub,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    fake_hub.add_repo("evil/Crafted-GGUF", dict(CRAFTED))
    code = main(["models", "files", "evil/Crafted-GGUF", "--headers", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    import json

    models = {m["filename"]: m for m in json.loads(out)["models"]}
    assert set(models) == set(CRAFTED)
    for name, says in SAYS.items():
        assert says in models[name]["header"]["error"]
    code = main(["models", "files", "evil/Crafted-GGUF", "--headers"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
