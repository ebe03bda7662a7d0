"""Regenerate docs/reliability.md: run the crafted hostile cases and tabulate what survived.

Run from the repository root::

    python -m specula_tools.reliability_report            # writes docs/reliability.md
    python -m specula_tools.reliability_report --check    # prints, writes nothing

Three sources of rows, all measured when the script runs:

* the test files that reproduce each defect of the reliability campaign
  (crafted files built at test time, the fake hub, real processes): one row per
  area, "cases tried" = test cases run, "survived" = cases that passed;
* a deterministic fuzz of the GGUF reader (mutated headers, seeded), counted
  here: a mutant survives when reading it gives a ModelInfo or a GGUFError;
* live examples of what the user sees, captured from the code, and the cost of
  bounding chat-template rendering on a normal render.

The "before" column is what the campaign found before the fixes (the issue's
numbers). The server's rows come from docs/reliability-server.md when present.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import random
import sys
import tempfile
import time
import timeit
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "docs" / "reliability.md"
SERVER_DOC = ROOT / "docs" / "reliability-server.md"


@dataclass
class Area:
    name: str
    before: str
    user_sees: str
    tests: list[str]
    tried: int = 0
    survived: int = 0
    failed: list[str] = field(default_factory=list)


AREAS = [
    Area("Chat templates: runaway loops, huge values, recursion (issue items 1, 6)",
         "two nested `range(100000)` hung the engine thread for good; `'A'*3e9` ended in MemoryError",
         "a `TemplateError` at a size cap, or after 1 s of CPU time (3 s by the wall clock on a "
         "starved machine), e.g. \"chat template: rendering took more than 1 s of CPU time "
         "(a runaway loop?)\"",
         ["tests/core/chat/test_template_limits.py"]),
    Area("Terminal chat: template errors, `--seed -1`, invalid UTF-8 (items 6, 8, 9)",
         "a render error ended the session; `--seed -1 --temp 0.8` and invalid UTF-8 crashed",
         "the error on one line and the next prompt; a fresh seed shown per reply; U+FFFD",
         ["tests/commands/test_chat_command.py"]),
    Area("GGUF values of the wrong kind, arrays nested deep (items 4, 5)",
         "NaN/inf or text gave ValueError/OverflowError tracebacks; a 60 KB file RecursionError",
         "\"FILE: llama.context_length should be an integer, found nan\"",
         ["tests/core/gguf/test_hostile_values.py"]),
    Area("Commands on hostile GGUF files: info, compat, chat, serve, models fit, models files "
         "--headers (item 4)",
         "tracebacks from all six commands",
         "one `specula: error:` line, exit 2; `models files --headers` lists the error per file",
         ["tests/commands/test_bad_gguf_commands.py"]),
    Area("Hub text with control characters (item 11)",
         "`models files` printed clear-screen and set-title escapes from names and the card",
         "hostile file names are not offered; tags and card text show `\\x1b` as text",
         ["tests/commands/test_hostile_hub_text.py"]),
    Area("Hub search reply size (item 12)",
         "a 300 MB reply took memory to 1.5 GB, or ended in MemoryError under a cap",
         "\"the hub's reply for the search for 'x' is larger than 8 MB; refused\"",
         ["tests/core/hub/test_search_reply_cap.py"]),
    Area("Downloads the hub lists without a sha256 (item 13)",
         "a corrupted body of the right size was saved as complete",
         "\"no checksum available, verified structure (header and tensor data size)\", or the "
         "damaged file deleted with \"... is not a valid GGUF file\"",
         ["tests/core/hub/test_unchecksummed_download.py"]),
    Area("Settings file: damaged, wrong types, newer schema, a directory (item 14)",
         "replaced by defaults and overwritten at the first save; schema 99 rewritten as 3; a "
         "directory aborted the app",
         "defaults, the old file kept as `settings.json.bad-<time>` and a dialog saying where",
         ["tests/core/test_settings.py"]),
    Area("Conversations database: damaged, newer, a directory, a bad row (item 15)",
         "the app exited 1 (while its dialog said it kept running); `created='abc'` aborted it",
         "a fresh database, the old one kept as `conversations.sqlite3.bad-<time>`, a dialog",
         ["tests/core/chat/test_damaged_store.py", "tests/gui/test_startup_recovery.py"]),
    Area("Adaptive-state file (item 16)",
         "`[]` or `\"draft\": \"x\"` broke every default-mode reply until deleted",
         "nothing: the state is discarded with a log line and the reply runs",
         ["tests/core/engine/test_adaptive_state_file.py"]),
    Area("Interrupted download test, pinned order (item 17)",
         "failed on a fresh clone under load (the pull finished before the SIGINT)",
         "a deterministic test: the hub stalls until the test releases it",
         ["tests/commands/test_models_command.py::test_pull_interrupted_leaves_a_resumable_part"]),
]


class _Collector:
    """A pytest plugin counting each test's outcome (setup errors count as failures)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, bool] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            ok = bool(report.passed) and not getattr(report, "wasxfail", False)
            self.outcomes[report.nodeid] = self.outcomes.get(report.nodeid, True) and ok
        elif report.when == "teardown" and report.failed:
            self.outcomes[report.nodeid] = False


def run_tests(areas: list[Area]) -> None:
    import pytest

    collector = _Collector()
    targets = [t for a in areas for t in a.tests]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *targets],
                       plugins=[collector])
    if code not in (0, 1):
        raise SystemExit(f"pytest could not run the cases (exit {code})")
    for area in areas:
        for nodeid, ok in collector.outcomes.items():
            if any(nodeid == t or nodeid.startswith(t.rstrip("/") + "::") for t in area.tests):
                area.tried += 1
                area.survived += ok
                if not ok:
                    area.failed.append(nodeid)


@dataclass
class FuzzResult:
    name: str
    tried: int
    parsed: int
    gguf_errors: int
    other: list[str]


def fuzz(name: str, data: bytes, n: int, seed: int) -> FuzzResult:
    from specula.core.gguf.model_info import GGUFError, model_info_from_header, tensor_bytes
    from specula.core.gguf.reader import BytesSource, read_header
    from specula_tools.crafted_gguf import mutate, random_mutations

    rng = random.Random(seed)
    parsed = errors = 0
    other: list[str] = []
    for _ in range(n):
        mutant = mutate(data, random_mutations(rng))
        try:
            header = read_header(BytesSource(mutant, "fuzz.gguf"))
            info = model_info_from_header(header)
            info.to_dict()
            tensor_bytes(header)
            parsed += 1
        except GGUFError:
            errors += 1
        except Exception as exc:  # what the fuzz looks for
            other.append(f"{type(exc).__name__}: {exc}"[:120])
    return FuzzResult(name, n, parsed, errors, other)


@contextlib.contextmanager
def _home() -> Iterator[Path]:
    old = os.environ.get("SPECULA_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SPECULA_HOME"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("SPECULA_HOME", None)
            else:
                os.environ["SPECULA_HOME"] = old


def examples() -> list[tuple[str, str]]:
    """(case, what the user sees), captured from the code now."""
    from gguf import GGUFValueType as T

    from specula.cli import main
    from specula.core.chat.conversations import ConversationStore
    from specula.core.chat.template import ChatTemplate, TemplateError
    from specula.core.settings import Settings
    from specula_tools.crafted_gguf import base_fields, header_bytes, with_field

    out: list[tuple[str, str]] = []
    nested = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    start, cpu = time.monotonic(), time.thread_time()
    try:
        ChatTemplate(nested, "", "", False).render([])
    except TemplateError as exc:
        out.append((f"nested `range(100000)` loops (ended after {time.thread_time() - cpu:.1f} s "
                    f"of CPU time, {time.monotonic() - start:.1f} s wall-clock on this shared "
                    "machine)", str(exc)))
    try:
        ChatTemplate("{{ 'A' * 3000000000 }}", "", "", False).render([])
    except TemplateError as exc:
        out.append(("`'A' * 3000000000`", str(exc)))
    with _home() as home:
        bad = home / "nan-context.gguf"
        bad.write_bytes(header_bytes(with_field(base_fields(), "llama.context_length", T.FLOAT32,
                                                math.nan)))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["info", str(bad)])
        out.append((f"`specula info` on a NaN context length (exit {code})",
                    err.getvalue().strip().replace(str(home), "…")))
        settings = Settings.path()
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_bytes(b'["a JSON list"]')
        notice = Settings.load().load_notice or ""
        out.append(("a settings file holding a JSON list", notice.replace(str(home), "…")))
        db = home / "data" / "conversations.sqlite3"
        db.parent.mkdir(parents=True, exist_ok=True)
        db.write_bytes(random.Random(3).randbytes(4096))
        store = ConversationStore(db)
        out.append(("a conversations database of random bytes",
                    (store.load_notice or "").replace(str(home), "…")))
        store.close()
    return out


def template_cost() -> str:
    """The cost of bounding, on a normal render: ours vs llama-cpp-python's formatter."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from specula.core.chat.template import ChatTemplate
    from specula_tools.tiny_models import CHATML_TEMPLATE

    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hello there " * 30}
            for i in range(40)]
    ours = ChatTemplate(CHATML_TEMPLATE, "", "<|im_end|>", False)
    ref = Jinja2ChatFormatter(template=CHATML_TEMPLATE, eos_token="<|im_end|>", bos_token="")
    assert ours.render(msgs) == ref(messages=msgs).prompt  # type: ignore[arg-type]
    n = 500
    # CPU time of this thread: on a shared machine wall-clock timings mostly measure
    # the other processes.
    t_ours = min(timeit.repeat(lambda: ours.render(msgs), number=n, repeat=7,
                               timer=time.thread_time)) / n
    t_ref = min(timeit.repeat(lambda: ref(messages=msgs), number=n, repeat=7,  # type: ignore[arg-type]
                              timer=time.thread_time)) / n
    return (f"Bounded rendering of a 40-message ChatML conversation: {t_ours * 1e6:.0f} µs of "
            f"CPU time, against {t_ref * 1e6:.0f} µs for llama-cpp-python's unbounded "
            f"formatter (best of 7 × {n}, this machine, {time.strftime('%Y-%m-%d')}).")


def server_rows() -> list[str]:
    if not SERVER_DOC.exists():
        return ["", "The server's rows (connections, load, request bodies, API keys) are in "
                "docs/reliability-server.md; it was not present when this file was generated."]
    lines = [ln for ln in SERVER_DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("|")]
    return ["", "## The server (from docs/reliability-server.md)", "", *lines]


def render(areas: list[Area], fuzzed: list[FuzzResult], seen: list[tuple[str, str]],
           cost: str) -> str:
    lines = [
        "# Reliability: hostile input, damaged files, the hub",
        "",
        "Generated by `python -m specula_tools.reliability_report` (do not edit by hand): it",
        "runs the crafted cases below and counts what survived. \"Before\" is what the",
        "reliability campaign found before the fixes (398 hand-built cases and 3,300 mutated",
        "GGUF headers; 74 cases failed, 17 defects).",
        "",
        "| area | before | cases tried | survived | what the user sees |",
        "|---|---|---:|---:|---|",
    ]
    for a in areas:
        lines.append(f"| {a.name} | {a.before} | {a.tried} | {a.survived} | {a.user_sees} |")
    for f in fuzzed:
        lines.append(
            f"| GGUF reader fuzz: {f.name} | 3,300 of 3,300 mutants held | {f.tried} | "
            f"{f.tried - len(f.other)} | {f.parsed} parsed, {f.gguf_errors} a GGUFError, "
            f"{len(f.other)} anything else |")
    failed = [n for a in areas for n in a.failed] + [o for f in fuzzed for o in f.other]
    lines += ["", "## What the user sees, captured now", ""]
    lines += [f"- {case}: `{text}`" for case, text in seen]
    lines += ["", "## Cost", "", cost]
    if failed:
        lines += ["", "## Did not survive", ""] + [f"- {n}" for n in failed]
    lines += server_rows()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="print the report, write nothing")
    p.add_argument("--mutants", type=int, default=3300, help="mutants per fuzzed header")
    a = p.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))  # the tests package
    run_tests(AREAS)
    from specula.core.gguf.reader import BytesSource, read_header
    from specula_tools.crafted_gguf import small_model_header
    from specula_tools.tiny_models import TARGET, build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        tiny = build_tiny_model(Path(tmp) / "tiny.gguf", TARGET).read_bytes()
    tiny_header = tiny[: read_header(BytesSource(tiny)).header_bytes]
    fuzzed = [fuzz("a small crafted header (1 KB)", small_model_header(), a.mutants, 1),
              fuzz("the tiny test model's header", tiny_header, a.mutants, 2)]
    text = render(AREAS, fuzzed, examples(), template_cost())
    if a.check:
        print(text)
    else:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT}")
    bad = sum(a_.tried - a_.survived for a_ in AREAS) + sum(len(f.other) for f in fuzzed)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
