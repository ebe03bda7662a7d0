"""Backends from ggml's device registry, the system report, and the offload plan."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from specula.cli import main
from specula.commands._engine_args import add_model_args, engine_options
from specula.core.engine.native.devices import GGMLDevice, add_rpc_servers, parse_endpoints
from specula.core.engine.native.llama import LoadError
from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.hardware import fit
from specula.core.hardware import system as hardware
from specula.core.hardware.fit import GiB


def gpu(free_gib: float, name: str = "CUDA0", backend: str = "CUDA") -> GGMLDevice:
    b = int(free_gib * GiB)
    return GGMLDevice(1, name, "test card", "gpu", backend, b, b)


CPU = GGMLDevice(0, "CPU", "test cpu", "cpu", "CPU", 16 * GiB, 32 * GiB)




def test_devices_include_the_cpu_with_memory() -> None:
    devices = hardware.list_devices()
    cpus = [d for d in devices if d.type == "cpu"]
    assert cpus and cpus[0].memory_total > 0 and cpus[0].name
    assert hardware.gpu_free_bytes() == [d.memory_free for d in devices
                                         if d.is_gpu and not d.is_remote]


def test_system_report_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    report = hardware.describe_system()
    assert report.backend in ("CPU", "CUDA", "Metal", "Vulkan")
    assert report.ram_total >= report.ram_available > 0
    assert report.default_threads == report.physical_cores or report.physical_cores == 0
    text = hardware.format_system(report)
    assert f"backend: {report.backend}" in text and "CPU" in text and "devices:" in text
    assert main(["info", "--system", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backend"] == report.backend
    assert any(d["type"] == "cpu" for d in data["devices"])
    assert main(["info", "--system"]) == 0
    assert capsys.readouterr().out.startswith("backend: ")


def test_no_gpu_means_everything_on_cpu(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    assert hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU]) == (0, 0)


def test_big_gpu_takes_both_whole(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    assert hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, gpu(24)]) == (25, 29)
    assert hardware.plan_offload(qwen7b, None, 4096, [CPU, gpu(24)]) == (0, 29)


def test_small_gpu_keeps_the_draft_whole_and_part_of_the_target(
        qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    draft, target = hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, gpu(3)])
    assert draft == 25  # every draft layer plus its output layer
    assert 0 < target < 28
    # what the plan puts on the GPU fits the usable VRAM
    t = fit.model_memory(qwen7b, 4096)
    d = fit.model_memory(qwen05b, 4096)
    per_layer = (t.weights + t.kv_cache) / 28
    assert d.total + t.compute + target * per_layer <= 3 * GiB * fit.GPU_USABLE
    # a bigger card gets more target layers
    assert hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, gpu(4)])[1] > target


def test_gpu_too_small_for_the_draft(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    draft, target = hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, gpu(0.45)])
    assert 0 <= draft < 25 and target == 0


def test_rpc_workers_take_the_target_not_the_draft(qwen7b: ModelInfo, qwen05b: ModelInfo) -> None:
    rpc = gpu(8, "RPC0", "RPC")
    assert hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, rpc]) == (0, 29)
    assert hardware.plan_offload(qwen7b, qwen05b, 4096, [CPU, rpc, gpu(24)]) == (25, 29)
    assert hardware.gpu_free_bytes() == hardware.gpu_free_bytes(include_remote=False)


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_model_args(p)
    return p.parse_args(argv)


def test_cli_gpu_layers_auto_and_explicit(tiny: dict[str, Path]) -> None:
    t, d = str(tiny["target"]), str(tiny["draft"])
    auto = engine_options(_args("--model", t, "--draft", d))
    expect_draft, expect_target = hardware.plan_offload(read_model_info(t), read_model_info(d), 4096)
    assert (auto.n_gpu_layers_draft, auto.n_gpu_layers_target) == (expect_draft, expect_target)
    fixed = engine_options(_args("--model", t, "--gpu-layers", "7", "--draft-gpu-layers", "-1",
                                 "--threads", "3"))
    assert (fixed.n_gpu_layers_target, fixed.n_gpu_layers_draft, fixed.n_threads) == (7, -1, 3)
    with pytest.raises(SystemExit):
        _args("--model", t, "--gpu-layers", "many")


def test_rpc_endpoints_are_checked() -> None:
    assert parse_endpoints("127.0.0.1:50052, 10.0.0.2:50053") == ("127.0.0.1:50052", "10.0.0.2:50053")
    for bad in ("", "host", "host:port", ":50052", "h:70000"):
        with pytest.raises(ValueError):
            parse_endpoints(bad)


@pytest.mark.skipif(hardware.describe_system().rpc, reason="this build has the RPC backend")
def test_rpc_without_the_backend_says_how_to_get_it() -> None:
    with pytest.raises(LoadError, match="GGML_RPC=on"):
        add_rpc_servers(("127.0.0.1:50052",))
