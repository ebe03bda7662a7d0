"""Property: whatever bytes a header holds, reading it gives a ModelInfo or a GGUFError.

Mutations of a small valid header (flipped bytes, counts and lengths set to
boundary values, truncations, insertions), and of a real tiny model's header.
Deterministic (``derandomize``): a small budget in the default run, a large one
under ``slow``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specula.core.gguf.model_info import GGUFError, model_info_from_header, tensor_bytes
from specula.core.gguf.reader import BytesSource, read_header
from specula_tools.crafted_gguf import BOUNDARIES, POSITIONS, mutate, small_model_header

BASE = small_model_header()

# Where a mutation lands, as a fraction of the header (see crafted_gguf.mutate): sampled
# uniformly (integers() would favour the first bytes, the magic and the version).
where = st.sampled_from(POSITIONS)
flip = st.tuples(st.just("flip"), where, st.integers(1, 255))
word = st.tuples(st.just("u64"), where, st.sampled_from(BOUNDARIES))
u32 = st.tuples(st.just("u32"), where, st.sampled_from(BOUNDARIES[:11]))
cut = st.tuples(st.just("cut"), where, st.just(0))
insert = st.tuples(st.just("insert"), where, st.binary(min_size=1, max_size=16))
mutations = st.lists(st.one_of(flip, word, u32, cut, insert), min_size=1, max_size=6)


def read_everything(data: bytes, size: int | None = None) -> None:
    """Everything a command does with a header; only GGUFError may come out."""
    try:
        header = read_header(BytesSource(data, "fuzz.gguf", size=size))
        info = model_info_from_header(header)
        info.to_dict()
        tensor_bytes(header)
        if info.tokenizer is not None:
            info.tokenizer.fingerprint()
    except GGUFError:
        pass


def _fuzz(data: bytes, ops: list[tuple[str, int, object]], remote_prefix: bool) -> None:
    mutated = mutate(data, ops)
    read_everything(mutated)
    if remote_prefix:  # the first bytes of a larger remote file
        read_everything(mutated[: len(mutated) // 2], size=len(mutated) * 4)


def test_the_base_header_reads() -> None:
    info = model_info_from_header(read_header(BytesSource(BASE, "base.gguf")))
    assert info.parameter_count == 2 * 64 * 16 and info.vocab_size == 16


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(ops=mutations, remote_prefix=st.booleans())
def test_mutated_headers_give_info_or_gguf_error(ops: list[tuple[str, int, object]],
                                                 remote_prefix: bool) -> None:
    _fuzz(BASE, ops, remote_prefix)


@pytest.mark.slow
@settings(max_examples=5_000, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(ops=mutations, remote_prefix=st.booleans())
def test_mutated_headers_many(ops: list[tuple[str, int, object]], remote_prefix: bool) -> None:
    _fuzz(BASE, ops, remote_prefix)


@pytest.fixture(scope="module")
def tiny_header(tiny: dict[str, Path]) -> bytes:
    data = tiny["target"].read_bytes()
    return data[: read_header(BytesSource(data)).header_bytes]


@pytest.mark.slow
@settings(max_examples=500, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=mutations)
def test_mutated_real_headers(tiny_header: bytes, ops: list[tuple[str, int, object]]) -> None:
    _fuzz(tiny_header, ops, remote_prefix=False)
