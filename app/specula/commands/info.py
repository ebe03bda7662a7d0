"""`specula info MODEL.gguf` and `specula info --system`."""

from __future__ import annotations

import argparse

from specula.commands._common import fail, print_json, say
from specula.commands._engine_args import rpc_endpoints
from specula.core.gguf.draft_head import head_info_from_header, is_head
from specula.core.gguf.memory_kind import MTP_ARCHS, MemoryKind
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info
from specula.core.gguf.speculation_notes import kind_rows
from specula.core.sizes import byte_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?", help="a GGUF file")
    p.add_argument("--system", action="store_true", help="describe this machine's backends")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--rpc", type=rpc_endpoints, default=(), metavar="HOST:PORT,...",
                   help="with --system: also list these rpc-server workers")


def format_info(info: ModelInfo) -> str:
    rows = [
        ("name", info.display_name),
        ("architecture", info.architecture),
        ("parameters", f"{info.parameter_count:,} ({info.size_label})" if info.parameter_count else info.size_label),
        ("quantization", info.quantization),
        ("file size", byte_size(info.file_size)),
        ("context length", info.context_length),
        ("layers", f"{info.trunk_layers} + {info.nextn_layers} MTP" if info.nextn_layers
         else info.n_layers),
        ("embedding size", info.n_embd),
        ("heads / KV heads", heads_text(info)),
        ("tokenizer", f"{info.tokenizer_model} (pre: {info.tokenizer_pre})"),
        ("vocab size", info.vocab_size),
        ("BOS / EOS", f"{info.bos_id} / {info.eos_id}"),
        ("add BOS / EOS", f"{info.add_bos} / {info.add_eos}"),
        ("chat template", "yes" if info.has_chat_template else "no"),
        ("tokenizer fingerprint", info.tokenizer_fingerprint),
        # a head has no memory or experts of its own to speak of: what it is instead
        *(head_rows(info) if is_head(info) else [*kind_rows(info), *mtp_use_rows(info)]),
    ]
    return "\n".join(f"{k:>22}: {v}" for k, v in rows)


def heads_text(info: ModelInfo) -> str:
    """Attention heads and KV heads; a recurrent model has no attention, and says so
    rather than printing the header's empty (or zero) counts."""
    if not info.n_head:
        if info.memory is MemoryKind.RECURRENT:
            return "none (recurrent: no attention layers)"
        return "not in the header"
    return f"{info.n_head} / {info.n_head_kv or info.n_head}"


def mtp_use_rows(info: ModelInfo) -> list[tuple[str, str]]:
    """How to draft with a target's own MTP layers (none without them)."""
    if not info.nextn_layers or info.architecture not in MTP_ARCHS:
        return []
    return [("draft with MTP", "--mode mtp, or adaptive with no --draft (the app's picker: "
                               "Built-in (MTP))")]


def head_rows(info: ModelInfo) -> list[tuple[str, str]]:
    """What a draft head is (EAGLE-3, DFlash, DSpark), from its header; GGUFError when
    llama.cpp would refuse it."""
    if not is_head(info):
        return []
    from specula.core.gguf.reader import FileSource, read_header

    head = head_info_from_header(read_header(FileSource(info.source)))
    mode = head.kind
    return [("draft head", head.describe()),
            ("draft with it", f"specula chat TARGET --draft {info.source} --mode {mode} "
                              f"(check the pair: specula compat TARGET {info.source})")]


def run(args: argparse.Namespace) -> int:
    if args.system:
        try:
            from specula.core.hardware import system as hardware
        except ImportError:
            return fail("system description is not available in this build")
        if args.rpc:
            from specula.core.engine.native.devices import add_rpc_servers
            from specula.core.engine.native.llama import LoadError

            try:
                add_rpc_servers(args.rpc)
            except LoadError as exc:
                return fail(str(exc))
        report = hardware.describe_system()
        if args.json:
            print_json(report.to_dict())
        else:
            say(hardware.format_system(report))
        return 0
    if not args.model:
        return fail("give a GGUF file, or --system")
    try:
        info = read_model_info(args.model)
    except GGUFError as exc:
        return fail(str(exc))
    try:
        text = format_info(info)
    except GGUFError as exc:
        return fail(str(exc))
    if args.json:
        print_json(info.to_dict())
    else:
        say(text)
    return 0
