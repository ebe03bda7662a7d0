"""One wording of "what is this file as the target's draft", for every view (issue 45, item 6).

The fixture models are built to be what the assertions say: Tiny-Coder 0.5B, 1.5B
and 7B share one tokenizer (ordered by size), Zebra uses a llama tokenizer with
other start and end tokens.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from specula.core.gguf.model_info import read_model_info
from specula.core.library.scan import Library
from specula.core.pairing.pair_status import PairKind, library_statuses, pair_status

MEDIUM = "tiny-coder-1.5b-instruct-q8_0.gguf"


def _status(hub_models: dict[str, Path], target: str, draft: str, draft_name: str):  # type: ignore[no-untyped-def]
    return pair_status(read_model_info(hub_models[target]), MEDIUM if target == "medium" else
                       target, read_model_info(hub_models[draft]), draft_name)


def test_each_kind_of_pair(hub_models) -> None:  # type: ignore[no-untyped-def]
    small = _status(hub_models, "medium", "small", "tiny-coder-0.5b-instruct-q4_k_m.gguf")
    assert small.kind is PairKind.SUITS and small.usable and small.suffix == ""
    big = _status(hub_models, "medium", "big", "tiny-coder-7b-instruct-q4_k_m.gguf")
    assert big.kind is PairKind.LARGER and not big.usable
    assert big.suffix == "  — larger than the target"
    same = _status(hub_models, "medium", "medium", "tiny-coder-1.5b-instruct-q4_k_m.gguf")
    assert same.kind is PairKind.SAME_SIZE and not same.usable
    itself = _status(hub_models, "medium", "medium", MEDIUM)
    assert itself.kind is PairKind.TARGET and not itself.usable


def test_an_incompatible_draft_says_why_in_plain_sentences(hub_models) -> None:  # type: ignore[no-untyped-def]
    zebra = _status(hub_models, "medium", "zebra", "zebra-0.5b-q4_k_m.gguf")
    assert zebra.kind is PairKind.INCOMPATIBLE and not zebra.usable
    # tokenizer kind, start token and end token differ: the first reason and "2 more"
    assert zebra.why == "The two models use different kinds of tokenizer (and 2 more)"
    assert zebra.suffix == f"  — incompatible: {zebra.why}"
    assert zebra.detail.startswith("Cannot draft for Tiny-Coder-1.5B-Instruct: The two models "
                                   "use different kinds of tokenizer.")
    assert ".;" not in zebra.detail and "start token" in zebra.detail


def test_library_statuses_judge_every_readable_file(hub_models, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for key, name in (("small", "s-0.5b-q4_k_m.gguf"), ("big", "b-7b-q4_k_m.gguf"),
                      ("zebra", "z-0.5b-q4_k_m.gguf")):
        shutil.copyfile(hub_models[key], tmp_path / name)
    (tmp_path / "broken-0.5b.gguf").write_bytes(b"GGUF not really")
    models = Library(tmp_path / "models", extra_dirs=[tmp_path]).scan().models
    out = library_statuses(read_model_info(hub_models["medium"]), MEDIUM, models)
    kinds = {Path(p).name: s.kind for p, s in out.items()}
    assert kinds == {"s-0.5b-q4_k_m.gguf": PairKind.SUITS, "b-7b-q4_k_m.gguf": PairKind.LARGER,
                     "z-0.5b-q4_k_m.gguf": PairKind.INCOMPATIBLE}
