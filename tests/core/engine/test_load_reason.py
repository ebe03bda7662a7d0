"""A failed load names llama.cpp's own reason (issue 45, item 1): read from its log
while the load runs, instead of a list of possible causes."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from specula.core.engine.native.llama import LoadError, Model
from specula.core.engine.native.load_log import LoadLog, short_of_memory


def test_a_truncated_file_names_the_tensor_out_of_bounds(tiny: dict[str, Path], tmp_path: Path) -> None:
    data = tiny["target"].read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 4096])
    with pytest.raises(LoadError) as info:
        Model(cut)
    assert "data is not within the file bounds" in info.value.reason
    assert info.value.reason in str(info.value)
    assert "unsupported architecture" not in str(info.value)  # the guesses give way


def test_the_reason_is_the_error_line_of_this_thread_only() -> None:
    log = logging.getLogger("specula.engine")
    other: list[None] = []

    def elsewhere() -> None:
        log.error("llama.cpp: llama_model_load: error loading model: another thread's load")
        other.append(None)

    with LoadLog() as heard:
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        log.error("llama.cpp: llama_model_load: error loading model: tensor 'x' is bad")
        log.error("llama.cpp: llama_model_load_from_file_impl: failed to load model")
    assert other and heard.reason() == "tensor 'x' is bad"
    log.error("llama.cpp: error loading model: after the load")  # no longer listened to
    assert len(heard.lines) == 2


def test_memory_failures_are_told_apart_from_damaged_files() -> None:
    assert short_of_memory("unable to allocate CPU buffer")
    assert short_of_memory("failed to allocate buffer for kv cache")
    assert not short_of_memory("tensor 'output.weight' data is not within the file bounds")
    assert not short_of_memory("")
