"""The verdicts behind the model pages' badges (no Qt)."""

from __future__ import annotations

from pathlib import Path

from specula.core.gguf.model_info import read_model_info
from specula.core.hardware.fit import GiB
from specula.core.pairing.badges import Tone, fit_badge, pair_badge


def test_pair_badge_roles(hub_models: dict[str, Path]) -> None:
    big, small = read_model_info(hub_models["big"]), read_model_info(hub_models["small"])
    zebra = read_model_info(hub_models["zebra"])
    assert pair_badge(None, small).tone is Tone.NEUTRAL
    good = pair_badge(big, small, "x-0.5B.gguf")
    assert good.text == "✓ draft for it" and good.tone is Tone.GOOD
    assert good.detail.startswith("Tiny-Coder-0.5B-Instruct can draft for Tiny-Coder-7B-Instruct")
    larger = pair_badge(small, big, "x-7B.gguf")
    assert larger.text == "✓ target for it"
    assert larger.detail.startswith("Tiny-Coder-0.5B-Instruct can draft for Tiny-Coder-7B")
    # the loaded file itself is not "the same size" as itself; another file as large is
    assert pair_badge(big, big).text == "loaded target"
    assert pair_badge(big, big, "tiny-coder-7b-instruct-q8_0.gguf").text == "✓ same size"
    bad = pair_badge(big, zebra)
    assert bad.tone is Tone.BAD and bad.text == "incompatible"


def test_fit_badge_counts_the_draft(hub_models: dict[str, Path]) -> None:
    big, small = read_model_info(hub_models["big"]), read_model_info(hub_models["small"])
    alone = fit_badge(big, 40 * GiB, n_ctx=4096, ram_available=32 * GiB)
    assert alone.tone is Tone.BAD and "Does not fit" in alone.detail
    gpu = fit_badge(big, 1 * GiB, draft=small, draft_weights=GiB // 2, n_ctx=4096,
                    gpu_free=[24 * GiB], ram_available=32 * GiB)
    assert gpu.text == "fits on GPU + draft" and gpu.tone is Tone.GOOD
    assert "with the draft Tiny-Coder-0.5B-Instruct" in gpu.detail
