"""The peer benchmark end to end: a stand-in llama-server (tests/fixtures/fake_llama_server.py)
beside a real ``specula serve`` on the tiny models, every side answering the same prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specula_tools import peer_bench

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_llama_server.py"


def test_every_side_answers_and_the_table_has_the_ratios(
        tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    server.chmod(0o755)
    out = tmp_path / "peer.json"
    assert peer_bench.main([
        "--llama-server", str(server), "--target", str(tiny["target"]), "--draft", str(tiny["draft"]),
        "--limit", "1", "--repeat", "2", "--max-tokens", "6", "--threads", "1",
        "--modes", "plain,adaptive,chain:3", "--peer-draft-max", "3,8", "--json", str(out),
        "--logs", str(tmp_path / "logs")]) == 0
    table = capsys.readouterr().out
    data = json.loads(out.read_text())
    sides = {r["side"] for r in data["runs"]}
    assert sides == {"llama-server", "llama-server draft:3", "llama-server draft:8",
                     "specula plain", "specula adaptive", "specula chain:3"}
    assert len(data["runs"]) == 6 * 2  # one prompt, six sides, two repeats
    (row,) = data["rows"]
    # the stand-in: 10 tok/s plain, 13 and 18 with the draft; its text is its own
    assert row["decode"]["llama-server draft:8"] == 18.0
    assert "(1.80x)" in table and "(1.30x)" in table
    assert row["identical"]["llama-server draft:3"] is True
    assert row["acceptance"]["llama-server draft:3"] == pytest.approx(0.5)
    spec = [r for r in data["runs"] if r["side"] == "specula chain:3"]
    assert all(r["tokens"] > 0 and r["decode_tok_s"] > 0 for r in spec)
    plain = {r["text"] for r in data["runs"] if r["side"] == "specula plain"}
    assert {r["text"] for r in spec} == plain  # greedy: Specula's modes give plain's text
    assert "adaptive / llama-server's best draft setting" in table


def test_mtp_sides_run_without_a_draft_model(
        families: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A target with MTP layers and no draft model: llama-server drafts with
    ``--spec-type draft-mtp`` (no ``-md``: the stand-in refuses one), Specula's mtp mode
    gives plain's text, and the table compares the two MTP sides."""
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    server.chmod(0o755)
    out = tmp_path / "peer.json"
    assert peer_bench.main([
        "--llama-server", str(server), "--target", str(families["qwen35-mtp"]),
        "--limit", "1", "--repeat", "1", "--max-tokens", "8", "--threads", "1",
        "--modes", "plain,mtp", "--peer-mtp-max", "2", "--json", str(out),
        "--logs", str(tmp_path / "logs")]) == 0
    table = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert {r["side"] for r in data["runs"]} == {"llama-server", "llama-server mtp:2",
                                                 "specula plain", "specula mtp"}
    (row,) = data["rows"]
    assert row["decode"]["llama-server mtp:2"] == 12.0  # the stand-in: 10 + k when drafting
    runs = {r["side"]: r for r in data["runs"]}
    assert runs["specula mtp"]["text"] == runs["specula plain"]["text"]
    assert runs["specula mtp"]["drafted"] > 0  # the MTP layers did draft
    assert "specula mtp / llama-server's best mtp setting" in table


def test_head_sides_give_the_same_text(tiny: dict[str, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A draft head beside llama-server's: llama-server gets ``-md HEAD --spec-type
    draft-<kind>`` (the stand-in refuses ``-md`` without a drafter type), Specula serves with
    the head, and its head mode gives plain's text."""
    from specula_tools.tiny_heads import build_head, spec_for

    head = build_head(tmp_path / "tiny-dflash.gguf", spec_for("dflash", 2))
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    server.chmod(0o755)
    out = tmp_path / "peer.json"
    assert peer_bench.main([
        "--llama-server", str(server), "--target", str(tiny["target"]), "--head", str(head),
        "--limit", "1", "--repeat", "1", "--max-tokens", "8", "--threads", "1",
        "--modes", "plain,dflash", "--peer-draft-max", "", "--peer-head-max", "3", "--json", str(out),
        "--logs", str(tmp_path / "logs")]) == 0
    capsys.readouterr()
    data = json.loads(out.read_text())
    assert {r["side"] for r in data["runs"]} == {"llama-server", "llama-server dflash:3",
                                                 "specula plain", "specula dflash"}
    (row,) = data["rows"]
    assert row["decode"]["llama-server dflash:3"] == 13.0  # the stand-in drafted (10 + k)
    runs = {r["side"]: r for r in data["runs"]}
    assert runs["specula dflash"]["text"] == runs["specula plain"]["text"]
    assert runs["specula dflash"]["drafted"] > 0  # the head did draft
