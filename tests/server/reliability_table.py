"""Regenerate docs/reliability-server.md: run the server's hostile-input tests and count.

Run from the repository root::

    python -m tests.server.reliability_table           # writes docs/reliability-server.md
    python -m tests.server.reliability_table --check   # prints, writes nothing

One row per area: "cases tried" = test cases run, "survived" = cases that
passed (each case is real sockets against a LocalServer on 127.0.0.1, or the
real ``specula serve`` in a child process). "What the user sees" is captured
from a live server while this script runs; "before" is what the reliability
campaign measured before the fixes. docs/reliability.md's generator copies
the table rows from this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "reliability-server.md"


@dataclass
class Area:
    name: str
    before: str
    tests: list[str]
    sees: str = ""  # filled from a live server
    tried: int = 0
    survived: int = 0
    failed: list[str] = field(default_factory=list)


AREAS = [
    Area("Hostile chat templates in `serve` (item 1)",
         "two nested `range(100000)` hung the engine thread for good; every later completion "
         "timed out", ["tests/server/test_hostile_templates.py"]),
    Area("Bursts of clients beyond the queue (item 2)",
         "40 simultaneous clients: 25 `ConnectionResetError`; the 429 was never reached",
         ["tests/server/test_connections.py::test_burst_beyond_the_queue_gets_429_with_retry_after"]),
    Area("Connection deadlines, the connection cap, the key before the body (item 3)",
         "300 half-sent requests kept 305 threads; at `ulimit -n 128`, 140 idle sockets made a "
         "normal request time out; the key was read only with the whole request",
         ["tests/server/test_connections.py", "tests/server/test_fd_limit.py", "--deselect",
          "tests/server/test_connections.py::test_burst_beyond_the_queue_gets_429_with_retry_after"]),
    Area("Request bodies: nesting, Content-Length, size, huge numbers, seeds, surrogates "
         "(items 7, 8, 9)",
         "100,000 nested `[` closed the connection unanswered; `Content-Length: ²` crashed; "
         "negative seeds and lone surrogates gave 500",
         ["tests/server/test_hostile_bodies.py", "tests/server/test_bad_requests.py"]),
    Area("API keys (item 10)",
         "a whitespace-only key bound 0.0.0.0 with a key no client can send; a non-ASCII key "
         "matched only when sent as latin-1", ["tests/server/test_api_keys.py",
                                              "tests/server/test_binding.py"]),
    Area("Load: 64 concurrent clients (whole, streaming, leaving mid-reply, slow senders)",
         "not measured", ["tests/server/test_load.py::test_64_concurrent_clients"]),
    Area("Request-parser fuzz (hypothesis, 150 requests; 4,000 under `-m slow`)",
         "not measured", ["tests/server/test_fuzz_requests.py"]),
    Area("Structured output meets its schema: keywords, escaping, the property test "
         "(issue 24)",
         "`type` lists, `required` outside `properties`, `allOf`, `oneOf`, `pattern` with "
         "`minLength`, `prefixItems` with `minItems` silently dropped; `^\\\"$` gave `\"\"\"`; "
         "a forced call's arguments were not JSON",
         ["tests/core/test_structured.py", "tests/core/test_structured_limits.py",
          "tests/core/test_structured_property.py"]),
    Area("Hostile structured requests: bounds, enums, patterns, deep grammars, bad values "
         "(issue 24)",
         "`maxLength` 30000, `maxItems` 100000, 100,000 nested `(`: SIGSEGV; a 100,000-value "
         "enum or `a{100000000}`: minutes of engine time; `minLength` 1e9: 500 MemoryError; "
         "`repeat_penalty` 0: 500; a token id outside the vocabulary: 500; `logit_bias` ignored",
         ["tests/server/test_bad_values.py"]),
    Area("Browser boundary: Host, Origin, preflight, Transfer-Encoding (issue 24)",
         "`Host: attacker.example` answered with the model's path (DNS rebinding); a cross-site "
         "text/plain POST generated; Content-Length with chunked: the trailing bytes served as a "
         "second request", ["tests/server/test_browser.py"]),
    Area("Start-up: SPECULA_HOME, model paths, duplicate vocabulary texts, stray temp files "
         "(issue 24)",
         "a file or full disk as SPECULA_HOME and a non-UTF-8 model path: tracebacks; a GGUF "
         "repeating a token text: abort (exit 134); a killed write's `*.tmp-PID-TID` kept "
         "forever", ["tests/server/test_startup_errors.py"]),
]


class Counter:
    """A pytest plugin: passed / failed per test node."""

    def __init__(self) -> None:
        self.results: dict[str, bool] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.failed:
            ok = report.passed and self.results.get(report.nodeid, True)
            self.results[report.nodeid] = ok


def run_area(area: Area) -> None:
    counter = Counter()
    pytest.main(["-q", "-p", "no:cacheprovider", "-m", "not slow", *area.tests],
                plugins=[counter])
    area.tried = len(counter.results)
    area.survived = sum(counter.results.values())
    area.failed = [n for n, ok in counter.results.items() if not ok]


def capture(areas: list[Area]) -> None:
    """What a client is told, from a server over the tiny models started here."""
    from dataclasses import replace

    from specula.core.engine.engine import Engine, EngineOptions
    from specula.server import EngineThread, LocalServer, ServedModel
    from specula.server.local import check_api_key
    from specula_tools.tiny_models import TARGET, build_tiny_model
    from tests.server.test_hostile_templates import NESTED_LOOPS, _template
    from tests.server.wire import exchange, post, request_bytes

    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(Path(tmp) / "t.gguf", replace(TARGET, chat_template=_template(
            NESTED_LOOPS)))
        engine = Engine(EngineOptions(n_ctx=512, n_threads=1))
        engine.load_target(path)
        host = EngineThread(engine, ServedModel.from_engine(engine, path), max_waiting=1)
        srv = LocalServer(host, port=0)
        srv.start()
        try:
            def ask(content: str) -> tuple[int, str]:
                r = post(srv.port, "/v1/chat/completions", {
                    "model": "t", "max_tokens": 2, "messages": [{"role": "user", "content": content}]})
                return r.status, r.json()["error"]["message"]

            start = time.monotonic()
            status, msg = ask("boom")
            took = time.monotonic() - start
            areas[0].sees = f"{status} after {took:.1f} s: \"{msg}\"; the next request is served"
            held, gate = threading.Event(), threading.Event()
            def hold(_engine: Engine) -> None:  # the engine is busy
                held.set()
                gate.wait(30)

            host.submit(hold)
            held.wait(30)
            host.submit(lambda _e: None)  # and the queue (of one) is full
            r = post(srv.port, "/v1/chat/completions", {
                "model": "t", "max_tokens": 2, "messages": [{"role": "user", "content": "x"}]})
            gate.set()
            areas[1].sees = (f"{r.status} with `Retry-After: {r.headers.get('retry-after')}`: "
                             f"\"{r.json()['error']['message']}\"")
            areas[2].sees = ("past its deadline (head 10 s, keep-alive idle 15 s, body 30 s) a "
                             "connection is closed; at the cap the oldest idle one makes room; a "
                             "wrong key gets 401 before any body is read")
            deep = exchange(srv.port, request_bytes("/v1/chat/completions", b"[" * 100_000))
            sq = exchange(srv.port, b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: "
                          b"\xb2\r\n\r\n{}")
            seed = post(srv.port, "/v1/chat/completions", {"model": "t", "seed": -5,
                                                          "messages": [{"role": "user", "content": "x"}]})
            areas[3].sees = "; ".join(f"{r.status} \"{r.json()['error']['message']}\""
                                      for r in (deep, sq, seed))
        finally:
            srv.stop()
            host.close()
    try:
        check_api_key("   ")
    except ValueError as exc:
        areas[4].sees = f"`specula serve` exits 2: \"{exc}\""
    areas[5].sees = "every request 200, or 429 with Retry-After; greedy replies byte-identical " \
                    "to a quiet run; threads and descriptors back to where they were"
    areas[6].sees = "every request a JSON answer below 500 on an open connection"
    areas[7].sees = ("every finished reply validates (jsonschema); a keyword the grammar cannot "
                     "enforce is a 400 naming it, e.g. \"" + _schema_refusal() + "\"")
    areas[8].sees = _hostile_figures()
    areas[9].sees = ("`Host: attacker.example`: 421; `Origin: http://evil.example`: 403 (allowed "
                     "with `--cors-origin`, preflight 204); Content-Length with Transfer-Encoding: "
                     "400 and the connection closed")
    areas[10].sees = ("one line, exit 2, e.g. \"specula: error: cannot use …/data for Specula's "
                      "files: Not a directory (SPECULA_HOME is …); set it to a writable folder\"; "
                      "stray temp files removed at the next start")


def _schema_refusal() -> str:
    from specula.core.structured import StructureError, schema_grammar

    try:
        schema_grammar({"oneOf": [{"type": "integer"}, {"type": "number"}]},
                       "response_format.json_schema.schema")
    except StructureError as exc:
        return str(exc)
    return "(not refused)"


def _hostile_figures() -> str:
    """The worst hostile requests, timed on a live in-process server over the tiny model:
    the slowest refusal, and a concurrent 5-token request's time beside its own."""
    import http.client
    from dataclasses import replace

    from specula.core.engine.engine import Engine, EngineOptions
    from specula.server import EngineThread, LocalServer, ServedModel
    from specula_tools.tiny_models import TARGET, build_tiny_model

    def body(extra: dict[str, Any]) -> bytes:
        return json.dumps({"model": "t", "messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": 5, "temperature": 0, **extra}).encode()

    def rf(schema: Any) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "s", "schema": schema}}}

    hostile = {
        "a 16 MB enum": body(rf({"enum": ["x" * 15000 + str(i) for i in range(1000)]})),
        "100,000 nested `(`": body({"specula": {"grammar": "root ::= " + "(" * 100_000 + '"a"'
                                                + ")" * 100_000}}),
        "`maxLength` 30000": body(rf({"type": "string", "maxLength": 30000})),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(Path(tmp) / "t.gguf", replace(TARGET, name="t"))
        engine = Engine(EngineOptions(n_ctx=512, n_threads=1))
        engine.load_target(path)
        host = EngineThread(engine, ServedModel.from_engine(engine, path))
        srv = LocalServer(host, port=0)
        srv.start()

        def post(data: bytes) -> tuple[int, float]:
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
            start = time.monotonic()
            conn.request("POST", "/v1/chat/completions", data, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            conn.close()
            return resp.status, time.monotonic() - start

        try:
            alone = sorted(post(body({}))[1] for _ in range(5))[2]
            parts = []
            for name, data in hostile.items():
                got: dict[str, tuple[int, float]] = {}
                t = threading.Thread(target=lambda d=data, g=got: g.setdefault("h", post(d)))
                t.start()
                time.sleep(0.02)
                _, beside = post(body({}))
                t.join()
                status, took = got["h"]
                parts.append(f"{name}: {status} in {took:.2f} s (a 5-token request beside it "
                             f"{beside:.2f} s, alone {alone:.2f} s)")
        finally:
            srv.stop()
            host.close()
    return "400 naming the field and the limit, before the engine; " + "; ".join(parts)


RULE = """## Whose failure it is

A failure the request causes is a 4xx naming the field; a 500 means the server or
the model file is at fault, never the request. Before any template runs, a request
is held to its context: more messages than the context has tokens (each message
takes at least one), or more characters in its messages, tool calls and tools than
`n_ctx` × 64 (the characters-per-token bound the rendered prompt is held to) or
the renderer's 8,000,000-character output cap,
is 400 `context_length_exceeded`; tool-call arguments nesting deeper than 64 levels
are 400 naming `messages[i].tool_calls[j].function.arguments`. A template's
`raise_exception` (a turn order it does not accept) is 400 `template_refused`,
quoting it. A template that fails otherwise on a request within these bounds is
the model's: 500 `template_error` or `template_timeout`. Templates themselves run
under the rule written in `core/chat/bounded_jinja.py`: their cost is counted before
it is paid (a step budget charged by every loop, call and filter and by what they
build; every result's
size predicted from its inputs before it is built; a source above 256 KB or 20,000
Jinja tokens refused at load).
"""


def render(areas: list[Area]) -> str:
    lines = ["# Reliability of the server", "",
             "Generated by `python -m tests.server.reliability_table` (do not edit by hand): it",
             "runs the server's hostile-input tests and counts what passed, and captures what a",
             "client is told from a live server. \"Before\" is what the reliability campaign found",
             "before the fixes.", "",
             "| area | before | cases tried | survived | what the user sees |",
             "|---|---|---:|---:|---|"]
    for a in areas:
        lines.append(f"| {a.name} | {a.before} | {a.tried} | {a.survived} | "
                     f"{a.sees.replace('|', '/')} |")
    failed = [n for a in areas for n in a.failed]
    if failed:
        lines += ["", "## Did not survive", ""] + [f"- {n}" for n in failed]
    lines += ["", f"Measured {time.strftime('%Y-%m-%d')} on this machine.", "", RULE.rstrip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print the table, write nothing")
    a = ap.parse_args(argv)
    for area in AREAS:
        run_area(area)
    capture(AREAS)
    text = render(AREAS)
    if a.check:
        print(text)
    else:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT}")
    print(json.dumps({x.name: [x.tried, x.survived] for x in AREAS}), file=sys.stderr)
    return 0 if all(x.tried == x.survived for x in AREAS) else 1


if __name__ == "__main__":
    sys.exit(main())
