"""`specula compat TARGET.gguf DRAFT.gguf`: exit 0 when the pair can be used, 1 when not.
The draft may be a draft head (EAGLE-3, DFlash, DSpark): then the head's own checks."""

from __future__ import annotations

import argparse

from specula.commands._common import fail, print_json, say
from specula.core.gguf.compat import check, format_report
from specula.core.gguf.draft_head import head_misfits, is_head, read_head_info
from specula.core.gguf.model_info import GGUFError, read_model_info


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="the target GGUF")
    p.add_argument("draft", help="the draft GGUF")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    try:
        target = read_model_info(args.target)
        draft = read_model_info(args.draft)
    except GGUFError as exc:
        return fail(str(exc))
    if is_head(draft):
        try:
            head = read_head_info(args.draft)
        except GGUFError as exc:
            return fail(str(exc))
        reasons = head_misfits(target, head)
        if args.json:
            print_json({"usable": not reasons, "head": head.kind, "describe": head.describe(),
                        "reasons": reasons})
        else:
            say(f"{args.draft}: {head.describe()}.")
            say("It fits the target." if not reasons else
                "It cannot draft for the target:\n" + "\n".join(f"  - {r}" for r in reasons))
        return 0 if not reasons else 1
    report = check(target, draft)
    if args.json:
        print_json(report.to_dict())
    else:
        say(format_report(report))
    return 0 if report.usable else 1
