"""`specula compat TARGET.gguf DRAFT.gguf`: exit 0 when the pair can be used, 1 when not."""

from __future__ import annotations

import argparse

from specula.commands._common import fail, print_json, say
from specula.core.gguf.compat import check, format_report
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
    report = check(target, draft)
    if args.json:
        print_json(report.to_dict())
    else:
        say(format_report(report))
    return 0 if report.usable else 1
