"""A running server on 127.0.0.1 over the tiny target + draft, shared by a test module."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.server import EngineThread, LocalServer, ServedModel

N_CTX = 2048
QWEN_TEMPLATE = (Path(__file__).parents[1] / "fixtures" / "qwen25_chat_template.jinja").read_text()


@pytest.fixture(scope="module")
def server(tiny: dict[str, Path]) -> Iterator[LocalServer]:
    engine = Engine(EngineOptions(n_ctx=N_CTX, n_threads=2))
    engine.load_target(tiny["target"])
    engine.load_draft(tiny["draft"])
    host = EngineThread(engine, ServedModel.from_engine(engine, tiny["target"], tiny["draft"]))
    # The tests exercise drafting; the default mode (adaptive) may decide that drafting
    # does not pay on models this small, so they ask for a fixed chain.
    srv = LocalServer(host, port=0, spec=SpecConfig(mode=Mode.CHAIN))
    srv.start()
    yield srv
    srv.stop()
    host.close()


@pytest.fixture(scope="module")
def qwen_pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny target and draft with Qwen2.5's real chat template (tools, <tool_call>)."""
    from dataclasses import replace

    from specula_tools.tiny_models import DRAFT, TARGET, build_tiny_model

    folder = tmp_path_factory.mktemp("tiny-qwen")
    return {key: build_tiny_model(folder / f"{spec.name}.gguf",
                                  replace(spec, chat_template=QWEN_TEMPLATE))
            for key, spec in (("target", TARGET), ("draft", DRAFT))}


@pytest.fixture(scope="module")
def tool_server(qwen_pair: dict[str, Path]) -> Iterator[LocalServer]:
    """A server over the Qwen-templated tiny pair, drafting with a fixed chain."""
    engine = Engine(EngineOptions(n_ctx=N_CTX, n_threads=2))
    engine.load_target(qwen_pair["target"])
    engine.load_draft(qwen_pair["draft"])
    host = EngineThread(engine, ServedModel.from_engine(engine, qwen_pair["target"],
                                                        qwen_pair["draft"]))
    srv = LocalServer(host, port=0, spec=SpecConfig(mode=Mode.CHAIN))
    srv.start()
    yield srv
    srv.stop()
    host.close()


@pytest.fixture
def tool_client(tool_server: LocalServer) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=tool_server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture
def client(server: LocalServer) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def raw(server: LocalServer, method: str, path: str, body: bytes | str | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request with http.client: (status, JSON body, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json",
                                                       **(headers or {})})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else {}, dict(resp.getheaders())
    finally:
        conn.close()


def post(server: LocalServer, path: str, obj: object, **kw: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    return raw(server, "POST", path, json.dumps(obj), **kw)


@pytest.fixture
def asked_for_slow(request: pytest.FixtureRequest) -> None:
    """Skip unless the run selected slow tests (``-m slow``): these take minutes, not seconds.

    The project's default run has no marker filter, so a ``slow`` mark alone would put a
    ten-minute soak into every run.
    """
    if "slow" not in (request.config.getoption("markexpr") or "") or \
            "not slow" in request.config.getoption("markexpr"):
        pytest.skip("a long run: select it with -m slow")
