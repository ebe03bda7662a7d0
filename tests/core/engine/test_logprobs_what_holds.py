"""What the README promises for logprobs, family by family, pinned:

* without a draft (plain) a reply's logprobs are those of decoding it token by token:
  equal, to float32 rounding, to a reference that feeds the prompt in one batch and
  then each token alone in a fresh llama.cpp context, log-softmaxed with numpy here;
* with a draft each one comes from the batch that verified it: the tokens are plain's,
  and the numbers differ from plain's by less than ``DRAFTED_TOL`` (the README's bound;
  measured worst cases are printed, and the README quotes them).

Only llama-cpp-python's low-level API computes the reference; the engine's code does not.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import llama_cpp as L
import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import TokenEvent
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.sampling_runs import fake_clock, make_engine

FAMILIES = ["llama", "qwen3moe", "qwen35", "granitehybrid", "lfm2", "mamba", "mamba2"]
DRAFTED = [SpecConfig(mode=Mode.CHAIN, draft_max=4),
           SpecConfig(mode=Mode.TREE, draft_max=4, tree_budget=8, tree_width=2),
           SpecConfig(mode=Mode.LOOKUP, draft_max=4)]
PLAIN_TOL = 1e-3  # the same decoding in another context layout (sequences, checkpoints):
# float32 rounding, measured up to 1.2e-4 (granitehybrid); a temperature or a position off
# by one moves a logprob by 0.05 nats or more
DRAFTED_TOL = 0.02  # nats: the README's bound for logprobs with a draft
N_TOKENS = 48
PROMPTS = ["hello world", "def print self return the code", "the model and the token",
           "lorem ipsum zebra quartz"]


def _paths(tiny: dict[str, Path], families: dict[str, Path], family: str) -> tuple[Path, Path]:
    if family == "llama":
        return tiny["target"], tiny["draft"]
    return families[family], families[f"{family}-draft"]


def token_by_token(path: Path, prompt: list[int], reply: list[int]) -> np.ndarray:
    """log-softmax of the target's logits before each reply token: the prompt in one
    batch, then every token alone, in one fresh context."""
    from specula.core.engine.native.backend import ensure_backend

    ensure_backend()  # only so that llama.cpp's log goes through Python logging
    model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
    assert model
    n_vocab = int(L.llama_vocab_n_tokens(L.llama_model_get_vocab(model)))
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = 512, 512, 512
    ctx = L.llama_init_from_model(model, cp)
    assert ctx
    rows = []
    try:
        feed = [prompt, *([t] for t in reply[:-1])]
        for toks in feed:
            arr = (L.llama_token * len(toks))(*toks)
            assert L.llama_decode(ctx, L.llama_batch_get_one(arr, len(toks))) == 0
            ptr = L.llama_get_logits_ith(ctx, -1)
            rows.append(np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                              shape=(n_vocab,)).astype(np.float64))
    finally:
        L.llama_free(ctx)
        L.llama_model_free(model)
    x = np.array(rows)
    mx = x.max(axis=1, keepdims=True)
    return x - (mx + np.log(np.exp(x - mx).sum(axis=1, keepdims=True)))


def _events(eng: Engine, prompt: list[int], spec: SpecConfig) -> list[TokenEvent]:
    gen = eng.generator
    assert gen is not None
    gen.reset()  # a fresh engine's answer: no prefix kept from the last reply
    with fake_clock():
        return [ev for ev in eng.generate_tokens(prompt, SamplingParams(max_tokens=N_TOKENS,
                                                                        logprobs=3), spec)
                if isinstance(ev, TokenEvent)]


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request: pytest.FixtureRequest, tiny: dict[str, Path],
         families: dict[str, Path]) -> Iterator[tuple[str, Path, Engine]]:
    target, draft = _paths(tiny, families, request.param)
    eng = make_engine(target, draft, n_ctx=512)
    yield request.param, target, eng
    eng.close()


def test_logprobs_hold_what_the_readme_says(pair: tuple[str, Path, Engine]) -> None:
    family, target, eng = pair
    worst_plain = worst_drafted = 0.0
    for text in PROMPTS:
        prompt = eng.tokenize_chat([{"role": "user", "content": text}])
        plain = _events(eng, prompt, SpecConfig(mode=Mode.PLAIN))
        ids = [e.token_id for e in plain]
        ref = token_by_token(target, prompt, ids)
        got = np.array([e.logprob for e in plain])
        worst_plain = max(worst_plain, float(np.abs(got - ref[np.arange(len(ids)), ids]).max()))
        for spec in DRAFTED:
            drafted = _events(eng, prompt, spec)
            assert [e.token_id for e in drafted] == ids, f"{family} {spec.mode.value}"
            diff = np.abs(np.array([e.logprob for e in drafted]) - got)
            worst_drafted = max(worst_drafted, float(diff.max()))
    print(f"[{family}] plain vs token by token {worst_plain:.1e}, drafted vs plain {worst_drafted:.1e}")
    assert worst_plain <= PLAIN_TOL
    assert worst_drafted < DRAFTED_TOL
