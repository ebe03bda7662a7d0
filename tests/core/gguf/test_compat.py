"""Every compatibility rule, each failing alone on the tiny variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.core.gguf.compat import Severity, Verdict, check
from specula.core.gguf.model_info import read_model_info


def _report(tiny: dict[str, Path], draft: str):  # type: ignore[no-untyped-def]
    return check(read_model_info(tiny["target"]), read_model_info(tiny[draft]))


def test_same_tokenizer_is_identical(tiny: dict[str, Path]) -> None:
    r = _report(tiny, "draft")
    assert r.verdict is Verdict.IDENTICAL and r.usable
    assert all(c.passed for c in r.checks)


@pytest.mark.parametrize(
    ("variant", "failing"),
    [
        ("vocab_size", "vocab_size"),
        ("bos_id", "bos"),
        ("add_bos", "bos"),
        ("add_eos", "eos"),
        ("token_text", "token_text"),
        ("vocab_type", "vocab_type"),
    ],
)
def test_each_blocking_rule_fails_alone(tiny: dict[str, Path], variant: str, failing: str) -> None:
    r = _report(tiny, variant)
    assert r.verdict is Verdict.INCOMPATIBLE and not r.usable
    assert [c.name for c in r.failures] == [failing]
    assert r.failures[0].message  # one plain sentence


def test_token_text_names_first_difference(tiny: dict[str, Path]) -> None:
    r = _report(tiny, "token_text")
    assert "Token 100 differs" in r.failures[0].message


def test_small_vocab_difference_is_compatible(tiny: dict[str, Path]) -> None:
    r = _report(tiny, "vocab_small_diff")
    assert r.verdict is Verdict.COMPATIBLE and r.usable and not r.failures


def test_pre_tokenizer_is_a_warning(tiny: dict[str, Path]) -> None:
    r = _report(tiny, "pre_tokenizer")
    assert r.usable and r.verdict is Verdict.COMPATIBLE
    assert [c.name for c in r.warnings] == ["pre_tokenizer"]
    assert r.warnings[0].severity is Severity.WARNING


def test_other_vocabulary_is_incompatible(tiny: dict[str, Path]) -> None:
    r = _report(tiny, "other")
    assert not r.usable
    assert {"vocab_type", "token_text"} <= {c.name for c in r.failures}
    assert "differ" in r.reason()


def test_cli_compat_exit_codes(tiny: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", str(tiny["target"]), str(tiny["draft"])]) == 0
    assert "verdict: identical" in capsys.readouterr().out
    assert main(["compat", str(tiny["target"]), str(tiny["other"]), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "incompatible" and data["usable"] is False


def test_cli_info(tiny: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["info", str(tiny["target"])]) == 0
    out = capsys.readouterr().out
    assert "tiny-target" in out and "F32" in out
    assert main(["info", str(tiny["target"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vocab_size"] == 398
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"hello world, not a model")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a GGUF file" in err and "Traceback" not in err
