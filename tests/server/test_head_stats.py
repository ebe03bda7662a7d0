"""The server with a draft head: a request in the head's mode drafts with it, its reply is
plain's (greedy), and the ``specula`` block counts the head's drafted and accepted tokens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.server import EngineThread, LocalServer, ServedModel
from specula_tools.tiny_heads import build_head, spec_for
from tests.server.conftest import post


@pytest.fixture(scope="module")
def head_server(tiny: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    head = build_head(tmp_path_factory.mktemp("server-head") / "eagle3.gguf", spec_for("eagle3", 2))
    engine = Engine(EngineOptions(n_ctx=1024, n_threads=1, calibrate=False))
    engine.load_target(tiny["target"])
    engine.load_head(head)
    host = EngineThread(engine, ServedModel.from_engine(engine, tiny["target"], head))
    srv = LocalServer(host, port=0, spec=SpecConfig(mode=Mode.EAGLE3))
    srv.start()
    yield srv
    srv.stop()
    host.close()


def test_the_specula_block_counts_the_heads_tokens(head_server: LocalServer) -> None:
    body = {"model": "tiny-target", "messages": [{"role": "user", "content": "hello world the model"}],
            "max_tokens": 24, "temperature": 0}
    status, plain, _ = post(head_server, "/v1/chat/completions", {**body, "specula": {"mode": "plain"}})
    assert status == 200
    status, out, _ = post(head_server, "/v1/chat/completions", body)  # the server's default: eagle3
    assert status == 200
    block = out["specula"]
    assert block["mode"] == "eagle3"
    assert block["drafted"] > 0 and 0 <= block["accepted"] <= block["drafted"]
    assert out["choices"][0]["message"]["content"] == plain["choices"][0]["message"]["content"]
    assert plain["specula"]["drafted"] == 0
