"""ggml's backend device registry through ctypes: list devices, add RPC workers.

llama-cpp-python 0.3.36 wraps neither ``ggml_backend_dev_*`` nor the RPC
registration (the old ``rpc_servers`` model parameter is gone from llama.cpp),
so they are bound here against the ``libggml`` that libllama uses (see
:func:`_ggml_of_llama`). Model loads with no explicit device list use every registered GPU-type
device, and llama.cpp puts RPC devices first: registering a worker is all it
takes to split a model's offloaded layers over it.
"""

from __future__ import annotations

import ctypes
import socket
import threading
from dataclasses import dataclass
from typing import Any

from specula.core.engine.native.backend import ensure_backend
from specula.core.engine.native.llama import LoadError

# enum ggml_backend_dev_type
DEVICE_TYPES = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel", 4: "meta"}

_lock = threading.Lock()
_lib: Any = None
_rpc_added: set[str] = set()


@dataclass(frozen=True)
class GGMLDevice:
    index: int
    name: str  # "CPU", "CUDA0", "Metal", "Vulkan0", "RPC0"
    description: str  # the card / CPU model, or the RPC endpoint
    type: str  # one of DEVICE_TYPES' values
    backend: str  # the registry it belongs to: "CPU", "CUDA", "Metal", "Vulkan", "RPC"
    memory_free: int
    memory_total: int

    @property
    def is_remote(self) -> bool:
        return self.backend.upper().startswith("RPC")

    @property
    def is_gpu(self) -> bool:
        """A device llama.cpp offloads layers to (local or remote)."""
        return self.type in ("gpu", "igpu")


def _ggml_of_llama() -> Any:
    """The ggml that libllama itself uses, where its device registry lives.

    Not simply ``llama_cpp._ggml.libggml``: wheels cannot hold symlinks, so
    ``lib/libggml.so`` and ``lib/libggml.so.0`` are two copies of one file, and
    ``_ggml`` loads the first while libllama loads the second; an RPC worker
    registered in the wrong copy is never seen by a model load. Looking the
    symbols up through libllama's handle (dlsym searches its dependencies)
    reaches the right copy on Linux and macOS; on Windows there is one ggml.dll.
    """
    from llama_cpp import _ggml
    from llama_cpp import llama_cpp as lcpp

    lib = getattr(lcpp, "_lib", None)
    if lib is not None:
        try:
            lib.ggml_backend_dev_count  # noqa: B018 - probe: resolvable through libllama?
            return lib
        except AttributeError:
            pass
    return _ggml.libggml


def _bind() -> Any:
    """libggml with the few prototypes this module needs (once per process)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        ensure_backend()
        lib = _ggml_of_llama()
        vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        protos: dict[str, tuple[list[Any], Any]] = {
            "ggml_backend_dev_count": ([], sz),
            "ggml_backend_dev_get": ([sz], vp),
            "ggml_backend_dev_name": ([vp], cp),
            "ggml_backend_dev_description": ([vp], cp),
            "ggml_backend_dev_type": ([vp], ctypes.c_int),
            "ggml_backend_dev_memory": ([vp, ctypes.POINTER(sz), ctypes.POINTER(sz)], None),
            "ggml_backend_dev_backend_reg": ([vp], vp),
            "ggml_backend_reg_name": ([vp], cp),
            "ggml_backend_reg_by_name": ([cp], vp),
            "ggml_backend_reg_get_proc_address": ([vp, cp], vp),
            "ggml_backend_register": ([vp], None),
        }
        for name, (args, res) in protos.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        _lib = lib
        return lib


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", errors="replace") if raw else ""


def list_devices() -> list[GGMLDevice]:
    """Every device this llama.cpp build (plus registered RPC workers) can use."""
    lib = _bind()
    out = []
    for i in range(int(lib.ggml_backend_dev_count())):
        dev = lib.ggml_backend_dev_get(i)
        if not dev:
            continue
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        reg = lib.ggml_backend_dev_backend_reg(dev)
        out.append(GGMLDevice(
            index=i, name=_text(lib.ggml_backend_dev_name(dev)),
            description=_text(lib.ggml_backend_dev_description(dev)),
            type=DEVICE_TYPES.get(int(lib.ggml_backend_dev_type(dev)), "unknown"),
            backend=_text(lib.ggml_backend_reg_name(reg)) if reg else "",
            memory_free=int(free.value), memory_total=int(total.value),
        ))
    return out


def local_gpu_handles() -> list[int]:
    """Handles of the local (non-RPC) GPU devices, for a load that must stay on this machine."""
    lib = _bind()
    out = []
    for d in list_devices():
        if d.is_gpu and not d.is_remote:
            out.append(int(lib.ggml_backend_dev_get(d.index)))
    return out


def rpc_supported() -> bool:
    """Whether this build has the RPC backend (llama-cpp-python built with -DGGML_RPC=on)."""
    return bool(_bind().ggml_backend_reg_by_name(b"RPC"))


def _probe(endpoint: str, timeout: float = 5.0) -> None:
    """Connect once from Python first: ggml-rpc aborts the whole process when it cannot."""
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise LoadError(f"Cannot reach the RPC worker {endpoint}: {exc}. Is rpc-server "
                        "running there and the port open?") from exc


def add_rpc_servers(endpoints: list[str] | tuple[str, ...]) -> list[str]:
    """Register ``host:port`` rpc-server workers as devices; returns the new ones.

    Idempotent per endpoint (registering twice would list its devices twice).
    Raises LoadError when the build lacks RPC or a worker does not answer.
    """
    lib = _bind()
    added = []
    with _lock:
        todo = [e.strip() for e in endpoints if e.strip() and e.strip() not in _rpc_added]
        if not todo:
            return []
        reg = lib.ggml_backend_reg_by_name(b"RPC")
        if not reg:
            raise LoadError(
                "This llama.cpp build has no RPC backend. Reinstall llama-cpp-python with "
                'CMAKE_ARGS="-DGGML_RPC=on" to use remote workers.')
        addr = lib.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_rpc_add_server")
        if not addr:
            raise LoadError("The RPC backend does not offer ggml_backend_rpc_add_server.")
        add_server = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(addr)
        for endpoint in todo:
            _probe(endpoint)
            server_reg = add_server(endpoint.encode())
            if not server_reg:
                raise LoadError(f"The RPC worker {endpoint} did not answer (is rpc-server "
                                "running there, with the same llama.cpp version?).")
            lib.ggml_backend_register(server_reg)
            _rpc_added.add(endpoint)
            added.append(endpoint)
    return added


def parse_endpoints(text: str) -> tuple[str, ...]:
    """``"h1:50052,h2:50052"`` -> endpoints, each checked for a host and a numeric port."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{part!r} is not HOST:PORT")
        out.append(part)
    if not out:
        raise ValueError("no RPC workers given")
    return tuple(out)
