"""llama.cpp's process-wide set-up: the backend initialised once with its log routed
into Python logging, what the build offloads to, and the CPU choices made before a
model loads (extra buffer types, threads)."""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Any

import llama_cpp as L

log = logging.getLogger("specula.engine")

_init_lock = threading.Lock()
_backend_ready = False
_log_callback: Any = None  # keep the ctypes callback alive for the process lifetime


def ensure_backend() -> None:
    """Initialise llama.cpp once and route its log into Python logging."""
    global _backend_ready, _log_callback
    with _init_lock:
        if _backend_ready:
            return
        L.llama_backend_init()

        @L.llama_log_callback  # type: ignore[untyped-decorator]
        def _on_log(level: int, text: bytes, _user: Any) -> None:
            # GGML_LOG_LEVEL: 2 info, 3 warn, 4 error; llama.cpp is chatty at info, so info
            # goes to DEBUG (where device placement, "model buffer size" etc. can be read).
            if not text or (level < 3 and not log.isEnabledFor(logging.DEBUG)):
                return
            msg = text.decode("utf-8", errors="replace").rstrip()
            if msg:
                lvl = logging.ERROR if level >= 4 else logging.WARNING if level == 3 else logging.DEBUG
                log.log(lvl, "llama.cpp: %s", msg)

        _log_callback = _on_log
        L.llama_log_set(_log_callback, ctypes.c_void_p(0))
        _backend_ready = True


def backend_name() -> str:
    """'CUDA', 'Metal', 'Vulkan' or 'CPU': what this llama.cpp build offloads to."""
    ensure_backend()
    info = L.llama_print_system_info().decode(errors="replace")
    for name, key in (("CUDA", "CUDA"), ("Metal", "METAL"), ("Vulkan", "VULKAN")):
        if key in info.upper() and L.llama_supports_gpu_offload():
            return name
    return "CPU"


_UNQUANTIZED = {"F32", "F16", "BF16"}


def extra_buffers_safe(quantization: str | None = None) -> bool:
    """Whether llama.cpp's CPU "extra buffer types" (AMX, weight repacking) may be used.

    Measured on a virtual machine whose /proc/cpuinfo advertises AMX: with the
    extra buffers, the first decode of a Q4_K_M model dies with a general
    protection fault inside libggml-cpu, while an F16 model runs 2-3x faster
    than without them. So they stay on for unquantized weights and go off for
    quantized ones where AMX is advertised. ``SPECULA_CPU_EXTRA_BUFFERS=0/1``
    forces the choice.
    """
    forced = os.environ.get("SPECULA_CPU_EXTRA_BUFFERS")
    if forced is not None:
        return forced.strip() not in ("0", "false", "no", "off")
    if quantization is not None and quantization.upper() in _UNQUANTIZED:
        return True
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "amx_tile" not in line.split()
    except OSError:
        pass
    return True


def default_threads() -> int:
    """Physical cores: llama.cpp's decode does not gain from SMT siblings."""
    import psutil

    return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)
