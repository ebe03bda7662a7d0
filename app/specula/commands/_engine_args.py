"""Arguments shared by the commands that load models (chat, bench, serve)."""

from __future__ import annotations

import argparse

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.sampling import SamplingParams
from specula.core.engine.session import EngineOptions


def add_model_args(p: argparse.ArgumentParser, *, target_flag: str = "--model") -> None:
    p.add_argument(target_flag, dest="target", required=True, help="target GGUF")
    p.add_argument("--draft", help="draft GGUF (same tokenizer)")
    p.add_argument("--ctx", type=int, default=4096, help="context length (default 4096)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: physical cores)")
    p.add_argument("--gpu-layers", type=int, default=0, help="target layers on the GPU")
    p.add_argument("--draft-gpu-layers", type=int, default=0, help="draft layers on the GPU")


def add_sampling_args(p: argparse.ArgumentParser, *, max_tokens: int = 512) -> None:
    g = p.add_argument_group("sampling")
    g.add_argument("--temp", type=float, default=0.0, help="temperature (0 = greedy, the default)")
    g.add_argument("--top-k", type=int, default=40)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--min-p", type=float, default=0.05)
    g.add_argument("--repeat-penalty", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--max-tokens", type=int, default=max_tokens)


def add_spec_args(p: argparse.ArgumentParser, *, with_mode: bool = True) -> None:
    g = p.add_argument_group("speculative decoding")
    if with_mode:
        g.add_argument("--mode", default=None, choices=[m.value for m in Mode],
                       help="drafting mode (default: chain with a draft, plain without)")
    g.add_argument("--draft-max", type=int, default=4, help="max draft tokens per step")
    g.add_argument("--draft-min", type=int, default=0, help="discard drafts shorter than this")
    g.add_argument("--p-min", type=float, default=0.0, help="stop drafting below this draft probability")


def engine_options(a: argparse.Namespace) -> EngineOptions:
    return EngineOptions(n_ctx=a.ctx, n_threads=a.threads, n_gpu_layers_target=a.gpu_layers,
                         n_gpu_layers_draft=a.draft_gpu_layers)


def sampling_params(a: argparse.Namespace) -> SamplingParams:
    return SamplingParams(temperature=a.temp, top_k=a.top_k, top_p=a.top_p, min_p=a.min_p,
                          repeat_penalty=a.repeat_penalty, seed=a.seed, max_tokens=a.max_tokens)


def spec_config(a: argparse.Namespace, has_draft: bool) -> SpecConfig:
    mode = Mode(a.mode) if getattr(a, "mode", None) else (Mode.CHAIN if has_draft else Mode.PLAIN)
    return SpecConfig(mode=mode, draft_max=a.draft_max, draft_min=a.draft_min, p_min=a.p_min)
