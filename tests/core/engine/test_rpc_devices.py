"""RPC workers: only with an RPC-enabled llama.cpp and running rpc-server processes.

Set SPECULA_RPC_WORKERS=127.0.0.1:50052,127.0.0.1:50053 (see the README's RPC
section) and run with an llama-cpp-python built with -DGGML_RPC=on; otherwise
these tests skip, except the one that needs a build *with* RPC and no worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done
from specula.core.engine.native.devices import add_rpc_servers, parse_endpoints, rpc_supported
from specula.core.engine.native.llama import LoadError
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.hardware import system as hardware

WORKERS = os.environ.get("SPECULA_RPC_WORKERS", "")
needs_rpc = pytest.mark.skipif(not rpc_supported(), reason="llama.cpp built without GGML_RPC")


@needs_rpc
def test_unreachable_worker_is_an_error_not_a_crash() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LoadError, match="Cannot reach"):
        add_rpc_servers((f"127.0.0.1:{port}",))


def _reply(engine: Engine, n: int = 32) -> Done:
    for ev in engine.chat([{"role": "user", "content": "hello world"}],
                          SamplingParams(max_tokens=n), SpecConfig(mode=Mode.CHAIN),
                          threading.Event()):
        if isinstance(ev, Done):
            return ev
    raise AssertionError("no Done")


@needs_rpc
@pytest.mark.skipif(not WORKERS, reason="SPECULA_RPC_WORKERS not set")
def test_target_split_over_workers_gives_the_local_reply(
        tiny: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    local = Engine(EngineOptions(n_ctx=512, n_threads=2))
    local.load_target(tiny["target"])
    local.load_draft(tiny["draft"])
    want = _reply(local)
    local.close()

    endpoints = parse_endpoints(WORKERS)
    remote = Engine(EngineOptions(n_ctx=512, n_threads=2, rpc_servers=endpoints,
                                  n_gpu_layers_target=-1, n_gpu_layers_draft=-1))
    rpc_devs = [d for d in hardware.list_devices() if d.is_remote]
    assert sorted(d.description for d in rpc_devs) == sorted(endpoints)
    assert all(d.memory_total > 0 for d in rpc_devs)
    with caplog.at_level(logging.DEBUG, logger="specula.engine"):
        remote.load_target(tiny["target"])
    # llama.cpp reports where the weights went: "RPC0[127.0.0.1:50052] model buffer size = ..."
    placed = [r.getMessage() for r in caplog.records if "model buffer size" in r.getMessage()]
    for endpoint in endpoints:
        assert any(f"[{endpoint}]" in m for m in placed), placed
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="specula.engine"):
        remote.load_draft(tiny["draft"])  # asks for every layer offloaded, yet stays local
    placed = [r.getMessage() for r in caplog.records if "model buffer size" in r.getMessage()]
    assert placed and not any("RPC" in m for m in placed), placed
    got = _reply(remote)
    remote.close()
    assert got.token_ids == want.token_ids
    assert got.stats.drafted > 0
