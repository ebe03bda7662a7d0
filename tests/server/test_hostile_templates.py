"""A chat template is code from the model file: a hostile one costs one request, never the engine.

Each template here is hostile only when the last message says "boom", so the
same server shows both halves: that request gets a JSON error within the
render deadline, and the next request (same template, same engine) succeeds.
Rendering happens on the HTTP thread when the host publishes its template,
and on the engine thread (bounded the same way) when it does not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specula.core.engine.engine import Engine, EngineOptions
from specula.server import EngineThread, LocalServer, ServedModel
from specula_tools.tiny_models import CHATML_TEMPLATE, TARGET, build_tiny_model
from tests.server.wire import post

NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
NESTED_OUTPUT = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
HOSTILE = {
    "nested_loops": (NESTED_LOOPS, 500, "template_timeout"),
    "nested_output": (NESTED_OUTPUT, 500, "template_timeout"),
    "float_times": ("{{ 'A' * 3e9 }}", 500, "template_error"),  # as filed: a TypeError
    "huge_string": ("{{ 'A' * 3000000 }}", 400, "context_length_exceeded"),
    # the template refusing the conversation is the request's problem, quoted back
    "raise_exception": ("{{ raise_exception('roles must alternate') }}", 400, "template_refused"),
    "undefined_call": ("{{ nothing.here() }}", 500, "template_error"),
}
CHAT = "/v1/chat/completions"
RENDER_S = 0.5  # the default is 2 s; the limit itself is what is tested


def _template(hostile: str) -> str:
    return ("{% if messages[-1]['content'] == 'boom' %}" + hostile + "{% else %}"
            + CHATML_TEMPLATE + "{% endif %}")


@pytest.fixture(scope="module", params=sorted(HOSTILE))
def hostile_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> tuple[str, Path]:
    name = request.param
    path = tmp_path_factory.mktemp("hostile") / f"{name}.gguf"
    build_tiny_model(path, replace(TARGET, name=f"tiny-{name}",
                                   chat_template=_template(HOSTILE[name][0])))
    return name, path


@pytest.fixture(scope="module", params=["http_thread", "engine_thread"])
def hostile_server(request: pytest.FixtureRequest, hostile_model: tuple[str, Path]
                   ) -> Iterator[tuple[str, LocalServer]]:
    name, path = hostile_model
    engine = Engine(EngineOptions(n_ctx=2048, n_threads=1))
    engine.load_target(path)
    served = ServedModel.from_engine(engine, path)
    assert served.template is not None
    if request.param == "engine_thread":  # a host that does not publish its template
        served = replace(served, template=None)
    host = EngineThread(engine, served)
    srv = LocalServer(host, port=0, render_timeout_s=RENDER_S)
    srv.start()
    yield name, srv
    srv.stop()
    host.close()


def _ask(srv: LocalServer, content: str) -> tuple[int, dict[str, object], float]:
    body = {"model": srv.host.served().id, "max_tokens": 3,  # type: ignore[union-attr]
            "messages": [{"role": "user", "content": content}]}
    start = time.monotonic()
    reply = post(srv.port, CHAT, body)
    return reply.status, reply.json(), time.monotonic() - start


def test_hostile_template_costs_one_request(hostile_server: tuple[str, LocalServer]) -> None:
    name, srv = hostile_server
    _, want_status, want_code = HOSTILE[name]
    status, body, took = _ask(srv, "boom")
    assert status == want_status, body
    err = body["error"]
    assert isinstance(err, dict) and err["message"]
    if want_status == 500:  # the server's deadline, or the renderer's own limits: either way
        assert err["code"] in ("template_timeout", "template_error"), err
    else:
        assert err["code"] == want_code, err
    assert took < RENDER_S + 10  # bounded: the loops alone would run for hours
    for _ in range(2):  # the engine is free: the same model answers the next requests
        status, body, _ = _ask(srv, "hello world")
        assert status == 200, body
