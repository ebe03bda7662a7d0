"""The lines that say what a model is: unknown is never worded as "none"."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specula.core.gguf.memory_kind import MemoryKind
from specula.core.gguf.model_info import read_model_info
from specula.core.gguf.speculation_notes import (
    experts_note,
    kind_rows,
    memory_note,
    mtp_note,
)
from specula.core.library.index import info_from_json, info_to_json


def test_notes() -> None:
    assert experts_note(0, 0).startswith("none (dense")
    assert experts_note(None, None) == "not known"
    assert experts_note(128, 8).startswith("128 total, 8 active per token")
    assert mtp_note(0, "qwen35").startswith("none")
    assert mtp_note(None, "qwen35") == "not known"
    assert mtp_note(2, "qwen35moe") == "2 layers, a built-in draft, no draft model needed"
    assert "unused" in mtp_note(1, "llama")  # no MTP graph for it in llama.cpp
    assert memory_note(None).startswith("memory kind unknown")
    assert memory_note(MemoryKind.HYBRID).startswith("hybrid memory: speculation is exact")


def test_an_entry_without_the_new_fields_says_not_known(families: dict[str, Path]) -> None:
    """A library index entry written before ModelInfo said what a model is: the memory
    still follows from the architecture, experts and MTP are not known (not "none")."""
    stored = info_to_json(read_model_info(families["qwen3moe"]))
    for key in ("expert_count", "expert_used_count", "nextn_layers", "attention_layers",
                "recurrent_layers", "recurrent_state_bytes"):
        stored.pop(key)
    old = info_from_json(stored)
    assert old is not None
    rows = dict(kind_rows(old))
    assert rows["memory"].startswith("attention memory")
    assert rows["experts"] == "not known" and rows["MTP layers"] == "not known"
    fresh = dict(kind_rows(read_model_info(families["qwen3moe"])))
    assert fresh["experts"].startswith("4 total, 2 active")
    dense = dict(kind_rows(replace(read_model_info(families["lfm2"]))))
    assert dense["experts"].startswith("none (dense") and dense["MTP layers"].startswith("none")
