"""Arguments shared by the commands that load models (chat, bench, serve)."""

from __future__ import annotations

import argparse
import sys

from specula.commands._common import say
from specula.core.engine.config import (
    DEFAULT_DRAFT_MAX,
    DEFAULT_MODE,
    Mode,
    SpecConfig,
    mtp_refusal,
)
from specula.core.engine.engine import Engine, EngineOptions, LoadError
from specula.core.engine.sampling.rules import DEFAULT_RULE, Rule, SamplingParams


def add_model_args(p: argparse.ArgumentParser, *, target_flag: str = "--model") -> None:
    p.add_argument(target_flag, dest="target", required=True, help="target GGUF")
    p.add_argument("--draft", help="draft GGUF (same tokenizer), or a draft head (EAGLE-3, DFlash, "
                                   "DSpark: recognised from its header, drafting in its own mode)")
    p.add_argument("--ctx", type=int, default=4096, help="context length (default 4096)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: physical cores)")
    p.add_argument("--gpu-layers", type=gpu_layers, default="auto",
                   help="target layers on the GPU, or auto (default: what is left after the draft)")
    p.add_argument("--draft-gpu-layers", type=gpu_layers, default="auto",
                   help="draft layers on the GPU, or auto (default: all, if it fits)")
    p.add_argument("--rpc", type=rpc_endpoints, default=(), metavar="HOST:PORT,...",
                   help="llama.cpp rpc-server workers to split the target over")


def gpu_layers(text: str) -> int | str:
    """argparse type: a layer count (-1 = all) or "auto"."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a layer count or 'auto'") from None
    if n < -1:
        raise argparse.ArgumentTypeError("use -1 for all layers, 0 for none")
    return n


def rpc_endpoints(text: str) -> tuple[str, ...]:
    from specula.core.engine.native.devices import parse_endpoints

    try:
        return parse_endpoints(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_sampling_args(p: argparse.ArgumentParser, *, max_tokens: int = 512) -> None:
    g = p.add_argument_group("sampling")
    g.add_argument("--temp", type=float, default=0.0, help="temperature (0 = greedy, the default)")
    g.add_argument("--top-k", type=int, default=40)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--min-p", type=float, default=0.05)
    g.add_argument("--repeat-penalty", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None,
                   help="sampling seed (-1: a fresh seed for each reply, shown after it)")
    g.add_argument("--rule", default=DEFAULT_RULE.value, choices=[r.value for r in Rule],
                   help=f"exact acceptance rule when sampling (default: {DEFAULT_RULE.value}: "
                        "the same text for a seed in every mode)")
    g.add_argument("--max-tokens", type=int, default=max_tokens)


def add_spec_args(p: argparse.ArgumentParser, *, with_mode: bool = True) -> None:
    g = p.add_argument_group("speculative decoding")
    if with_mode:
        g.add_argument("--mode", default=None, choices=[m.value for m in Mode],
                       help=f"drafting mode (default: {DEFAULT_MODE.value})")
    g.add_argument("--draft-max", type=int, default=DEFAULT_DRAFT_MAX,
                   help=f"max draft tokens per step: a chain's length, adaptive's cap (default {DEFAULT_DRAFT_MAX})")
    g.add_argument("--draft-min", type=int, default=0, help="discard drafts shorter than this")
    g.add_argument("--p-min", type=float, default=0.0, help="stop drafting below this draft probability")


def _auto_layers(a: argparse.Namespace) -> tuple[int, int]:
    """hardware.plan_offload for the files given (0, 0 when a header cannot be read)."""
    from specula.core.gguf.model_info import GGUFError, read_model_info
    from specula.core.hardware import system as hardware

    try:
        target = read_model_info(a.target)
        draft = read_model_info(a.draft) if a.draft else None
    except (GGUFError, OSError):
        return 0, 0  # the load itself will report the file problem
    return hardware.plan_offload(target, draft, a.ctx)


def engine_options(a: argparse.Namespace) -> EngineOptions:
    """EngineOptions from the arguments; registers RPC workers first so that auto sees them."""
    rpc = tuple(getattr(a, "rpc", ()) or ())
    if rpc:
        from specula.core.engine.native.devices import add_rpc_servers

        add_rpc_servers(rpc)
    target, draft = a.gpu_layers, a.draft_gpu_layers
    if "auto" in (target, draft):
        auto_draft, auto_target = _auto_layers(a)
        target = auto_target if target == "auto" else target
        draft = auto_draft if draft == "auto" else draft
    return EngineOptions(n_ctx=a.ctx, n_threads=a.threads, n_gpu_layers_target=int(target),
                         n_gpu_layers_draft=int(draft), rpc_servers=rpc)


def sampling_params(a: argparse.Namespace) -> SamplingParams:
    return SamplingParams(temperature=a.temp, top_k=a.top_k, top_p=a.top_p, min_p=a.min_p,
                          repeat_penalty=a.repeat_penalty, seed=a.seed, max_tokens=a.max_tokens,
                          rule=Rule(getattr(a, "rule", DEFAULT_RULE.value)))


def spec_config(a: argparse.Namespace, has_draft: bool) -> SpecConfig:
    mode = Mode(a.mode) if getattr(a, "mode", None) else DEFAULT_MODE
    return SpecConfig(mode=mode, draft_max=a.draft_max, draft_min=a.draft_min, p_min=a.p_min)


def _check_path_text(path: str | None) -> None:
    """llama.cpp takes a model's path as UTF-8: a name with other bytes (read by Python
    as surrogate escapes) is refused here, as a LoadError, rather than as an encoding
    error on the way into llama.cpp."""
    if path is None:
        return
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise LoadError(f"{shown}: the file's path is not valid UTF-8, which llama.cpp needs; "
                        "rename the file or a folder above it") from None


def load_engine(a: argparse.Namespace) -> Engine:
    """Build the Engine from the command's options and load the pair; raises LoadError."""
    for path in (a.target, a.draft):
        _check_path_text(path)
    engine = Engine(engine_options(a))
    say(f"loading {a.target} ...", file=sys.stderr)
    engine.load_target(a.target)
    if a.draft:
        load_draft_or_head(engine, a)
    check_mtp(engine, [a.mode] if getattr(a, "mode", None) else [])
    return engine


def load_draft_or_head(engine: Engine, a: argparse.Namespace) -> None:
    """``--draft``: a draft model, or a draft head recognised from its header (then the
    mode is the head's own unless ``--mode`` says otherwise, and it is said which)."""
    from specula.core.gguf.draft_head import is_head
    from specula.core.gguf.model_info import GGUFError, read_model_info

    try:
        head = is_head(read_model_info(a.draft))
    except (GGUFError, OSError):
        head = False  # load_draft reports the file's problem
    if not head:
        say(f"loading draft {a.draft} ...", file=sys.stderr)
        engine.load_draft(a.draft)
        return
    info = engine.load_head(a.draft)
    if getattr(a, "mode", None) is None and hasattr(a, "mode"):
        a.mode = info.kind
    say(f"{a.draft}: {info.describe()}; drafting with it in mode {info.kind}", file=sys.stderr)


def check_mtp(engine: Engine, modes: list[str]) -> None:
    """Fail closed: mode ``mtp`` on a target without MTP layers would run plain unsaid;
    so would a head mode (``eagle3``, ``dflash``, ``dspark``) without that kind of head."""
    loaded = engine.head_info.kind if engine.head_info is not None else None
    for mode in modes:
        if mode in (Mode.EAGLE3.value, Mode.DFLASH.value, Mode.DSPARK.value) and mode != loaded:
            have = f"the head given is {loaded}" if loaded else "no draft head was given"
            raise LoadError(f"mode {mode} drafts with a {mode} head (--draft HEAD.gguf); {have}")
    if Mode.MTP.value in modes and not engine.mtp_layers:
        raise LoadError(mtp_refusal(target_name(engine)))


def target_name(engine: Engine) -> str:
    return engine.target_info.source if engine.target_info else "the target"
