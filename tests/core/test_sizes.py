"""One byte-size writing for every view: decimal units, three significant digits, the
way the hub shows a file (its listing of Qwen2.5-Coder-1.5B Q4_K_M, 1,117,320,768 bytes,
reads 1.12 GB)."""

from __future__ import annotations

import pytest

from specula.core.sizes import byte_size


@pytest.mark.parametrize(("n", "text"), [
    (None, "?"),
    (0, "0 B"),
    (512, "512 B"),
    (999, "999 B"),
    (1000, "1.00 kB"),
    (1536, "1.54 kB"),  # 1.536 thousand
    (12_345, "12.3 kB"),
    (999_499, "999 kB"),
    (999_500, "1.00 MB"),  # 999.5 kB rounds to 1000 kB at three digits: the next unit says it
    (50 * 2**20, "52.4 MB"),  # 52,428,800 bytes
    (491_400_064, "491 MB"),
    (1_117_320_768, "1.12 GB"),
    (9_995_000_000, "10.0 GB"),
    (16 * 2**30, "17.2 GB"),  # 17,179,869,184 bytes: a 16 GiB machine's RAM
    (5_000_000_000_000, "5.00 TB"),
    (2_000_000_000_000_000, "2000 TB"),  # no unit past TB
])
def test_byte_size(n: float | None, text: str) -> None:
    assert byte_size(n) == text


def test_a_file_reads_the_same_in_the_cli_and_the_gui() -> None:
    """The CLI's table, the library's labels and the GUI's badges all write one size."""
    from specula.commands import _models_text, info, ngrams
    from specula.core.hardware import fit, system
    from specula.core.library import labels
    for module in (_models_text, info, ngrams, fit, system, labels):
        assert module.byte_size is byte_size
    assert labels.label_for("/m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", None, 1_117_320_768).size == "1.12 GB"
