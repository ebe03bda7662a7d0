"""Picker labels: a clean name, the file's own quantization and size kept apart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.library.labels import clean_name, describe, label_for


def test_stale_quantization_words_leave_the_name() -> None:
    assert clean_name("Qwen2.5 Coder 0.5B Instruct AWQ") == "Qwen2.5 Coder 0.5B Instruct"
    assert clean_name("qwen2.5-coder-1.5b-instruct-q4_k_m") == "qwen2.5-coder-1.5b-instruct"
    assert clean_name("Llama-3.2-1B-Instruct-GPTQ-Int4") == "Llama-3.2-1B-Instruct"
    assert clean_name("Qwen2.5-Coder") == "Qwen2.5-Coder"  # nothing to strip
    assert clean_name("AWQ") == "AWQ"  # never empty


def test_the_label_takes_the_files_own_quantization(tiny: dict[str, Path]) -> None:
    info: ModelInfo = replace(read_model_info(tiny["draft"]),
                              name="Qwen2.5 Coder 0.5B Instruct AWQ", size_label="0.5B",
                              quantization="Q4_K_M")
    label = label_for(info.source, info)
    assert (label.name, label.size, label.quant) == ("Qwen2.5 Coder 0.5B Instruct", "0.5B", "Q4_K_M")
    assert label.detail == "0.5B · Q4_K_M"
    assert "AWQ" not in describe(info) and describe(info).endswith("0.5B · Q4_K_M")


def test_without_a_header_the_file_name_speaks() -> None:
    label = label_for("/m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", None, 1_117_000_000)
    assert (label.name, label.size, label.quant) == ("qwen2.5-coder-1.5b-instruct", "1.12 GB", "Q4_K_M")
