"""summary.txt of the GPU check: what run.sh measured, in one page a person reads first.

Reads the ``bench-*.json`` files that ``specula bench --json`` wrote under ``--out``, the
phase times run.sh kept, and the machine (nvidia-smi, or the CPU on a dry run). Only the
standard library: it runs on the device beside a build that may have failed.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import time
from pathlib import Path

COLUMNS = (  # (header, summary key, format)
    ("tok/s", "tok_per_s_median", "{:8.1f}"),
    ("x plain", "speedup_median", "{:7.2f}"),
    ("host", "host_share_median", "{:6.1%}"),
    ("host/step p50", "host_share_step_median", "{:13.1%}"),
    ("p90", "host_share_step_p90", "{:6.1%}"),
    ("drafter", "draft_host_share_median", "{:7.1%}"),
    ("host us/step", "host_us_per_step_median", "{:12.0f}"),
    ("step us", "step_us_median", "{:8.0f}"),
    ("TTFT s", "ttft_s_median", "{:7.3f}"),
    ("accept", "acceptance", "{:6.0%}"),
)


def device_line(cpu: bool) -> str:
    """The accelerator as nvidia-smi names it, or the processor on a dry run."""
    if not cpu and shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20, check=True).stdout.strip()
            return f"GPU: {out}"
        except (OSError, subprocess.SubprocessError) as exc:
            return f"GPU: nvidia-smi failed ({exc})"
    label = "CPU only (no GPU used)" if cpu else "no nvidia-smi here; the processor"
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{label}: {name}"


def llama_line() -> str:
    try:
        import llama_cpp  # the build under test; absent when it failed
    except Exception as exc:  # an import of a broken build can fail in many ways
        return f"llama_cpp: does not import ({type(exc).__name__}: {exc})"
    return (f"llama_cpp {llama_cpp.__version__} from {Path(llama_cpp.__file__).parent}, "
            f"gpu offload {'yes' if llama_cpp.llama_supports_gpu_offload() else 'no'}")


def phases_text(path: Path) -> list[str]:
    lines, total = [], 0
    if path.is_file():
        for row in path.read_text().splitlines():
            name, secs, status = [*row.split("\t"), "", ""][:3]
            total += int(secs or 0)
            lines.append(f"  {name:<20} {secs:>5} s  {status}")
    return [*lines, f"  {'(phases together)':<20} {total:>5} s"]


def bench_table(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    setup, summary = data.get("setup", {}), data.get("summary", {})
    s = setup.get("sampling", {})
    how = "greedy" if not s.get("temperature") else f"T {s.get('temperature')}, seed {s.get('seed')}"
    lines = [f"{path.stem}: {setup.get('target')}",
             f"  backend {setup.get('backend')}, {setup.get('threads')} threads, {how}, "
             f"repeat {setup.get('repeat')}, {len(data.get('runs', []))} runs"]
    head = "  " + f"{'mode':<10}" + " ".join(f"{h:>{len(f.format(0))}}" for h, _, f in COLUMNS)
    lines.append(head)
    for mode, m in summary.items():
        cells = " ".join(f.format(float(m.get(k, 0.0))) for _, k, f in COLUMNS)
        lines.append(f"  {mode:<10}{cells}   identical {m.get('identical', '-')}")
    return lines


ERROR_MARKS = ("CMake Error", "error:", "Error ", "fatal", "No such file", "not found", "Killed")
NOT_ERRORS = ("not a git repository", "Git repository not found")  # llama.cpp's build info, from a tarball


def build_failure(lines: list[str], first: int = 12, last: int = 15) -> list[str]:
    """What a failed build said: its first error lines (pip and CMake bury them under
    pages of output) and its last lines (a timeout shows only there)."""
    errors = [ln[:300] for ln in lines if any(m in ln for m in ERROR_MARKS)
              and not any(n in ln for n in NOT_ERRORS)][:first]
    return ["build.log, first error lines:", *(errors or ["  (none matched)"]),
            "build.log, last lines:", *(ln[:300] for ln in lines[-last:])]


def run_order(path: Path) -> tuple[int, int, str]:
    """bench-e64-greedy before bench-e64-sampled before bench-e160-greedy."""
    parts = path.stem.split("-")
    width = int(parts[1][1:]) if len(parts) > 2 and parts[1][1:].isdigit() else 1 << 30
    return width, {"greedy": 0, "sampled": 1}.get(parts[-1], 2), path.stem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--phases", type=Path, default=Path("/nonexistent"))
    ap.add_argument("--cpu", default="0")
    ap.add_argument("--layers", default="?")
    ap.add_argument("--note", default="")
    a = ap.parse_args(argv)
    cpu = a.cpu == "1"
    out = [f"Specula GPU check ({'CPU dry run' if cpu else 'device'}), "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {a.note}",
           device_line(cpu), llama_line(), f"layers offloaded (target and draft): {a.layers}",
           "", "phases:", *phases_text(a.phases), ""]
    out.append("host = the reply's time outside llama_decode; host/step = per step (median, p90); "
               "drafter = the drafter's own Python share; medians over prompts x repeats")
    # in the order run.sh runs them: the shape (n_embd 64) first, greedy before sampled
    files = sorted(a.out.glob("bench-*.json"), key=run_order)
    for path in files:
        try:
            out += ["", *bench_table(path)]
        except (OSError, ValueError, AttributeError) as exc:
            out += ["", f"{path.name}: unreadable ({exc})"]
    build_log = a.out / "build.log"
    if "build" in a.note and build_log.is_file():
        out += ["", *build_failure(build_log.read_text(errors="replace").splitlines())]
    bench_log = a.out / "bench.log"
    if a.note != "complete" and "build" not in a.note and bench_log.is_file():
        # an import, a proxy or a benchmark failed: its traceback is at the end of bench.log
        out += ["", "bench.log, last lines:",
                *(ln[:300] for ln in bench_log.read_text(errors="replace").splitlines()[-20:])]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
