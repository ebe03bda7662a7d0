"""The prepared GPU check (packaging/gpu-check/) is run once, in one call, on a machine this
project is only sometimes lent: what can go wrong before it starts must be caught here.
The scripts must parse, the call written in the README must fit the device tool's limits
and name only files that exist or that prepare.sh makes, run.sh must return no more files
than the device sends back, and summary.py must report what the benchmark files say."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "packaging" / "gpu-check"
SCRIPTS = ("prepare.sh", "run.sh", "cuda_env.sh")
MAX_COMMAND = 2000  # the device tool's limit on a command's length
MAX_CARRY = 8  # ... on carried paths
MAX_TIMEOUT_S = 600  # ... on one command's run
MAX_RETURNED_FILES = 8  # ... on the files that come back from $OUT


def bash_syntax_error(path: Path) -> str:
    """bash -n's complaint about a script ('' when it parses)."""
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=10)
    return r.stderr.strip() if r.returncode else ""


def readme_run_call(text: str) -> dict[str, object]:
    """The JSON block after the README's ``<!-- run-call -->`` marker: the device call."""
    m = re.search(r"<!-- run-call -->\s*```json\n(.*?)\n```", text, re.S)
    if not m:
        raise ValueError("no ```json block after <!-- run-call --> in the README")
    return dict(json.loads(m.group(1)))


def call_problems(call: dict[str, object], root: Path, prepare_text: str) -> list[str]:
    """What would make the device refuse the call or fail at once (empty when none)."""
    problems = []
    command = str(call.get("command", ""))
    if not command or len(command) >= MAX_COMMAND:
        problems.append(f"command is {len(command)} characters (1..{MAX_COMMAND - 1})")
    timeout = call.get("timeout_s", MAX_TIMEOUT_S)
    if not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT_S:
        problems.append(f"timeout_s {timeout!r} is not 1..{MAX_TIMEOUT_S}")
    carry = call.get("carry", [])
    if not isinstance(carry, list) or len(carry) > MAX_CARRY:
        problems.append(f"carry {carry!r} is not a list of at most {MAX_CARRY} paths")
        carry = []
    for path in carry:  # made by prepare.sh, not in the tree
        if f"$ROOT/{path}" not in prepare_text:
            problems.append(f"carried {path!r} is not made by prepare.sh")
    for word in shlex.split(command.replace(";", " ; ").replace("&&", " && ")):
        word = word.split("=", 1)[-1]
        is_path = ("/" in word or word.endswith((".sh", ".py"))) and not word.startswith(("$", "/"))
        if is_path and not (root / word).exists():
            problems.append(f"the command names {word!r}, which does not exist")
    return problems


def returned_files(run_text: str) -> list[str]:
    """The files run.sh writes under $OUT, with bench-$e-$kind.json spelled out for every
    run in its benchmark loop."""
    names = set(re.findall(r"\$OUT/([A-Za-z0-9_.$-]+)", run_text))
    loop = re.search(r"^for run in (.+); do$", run_text, re.M)
    runs = loop.group(1).split() if loop else []
    out = []
    for name in sorted(names):
        if "$" in name:
            out += [name.replace("$e", r.split(":")[0]).replace("$kind", r.split(":")[1]) for r in runs]
        else:
            out.append(name)
    return out


def load_summary() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check_summary", CHECK / "summary.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- the scripts parse ------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name", SCRIPTS)
def test_script_parses(name: str) -> None:
    assert bash_syntax_error(CHECK / name) == ""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_broken_script_is_caught(tmp_path: Path) -> None:
    broken = tmp_path / "run.sh"
    broken.write_text((CHECK / "run.sh").read_text().replace("done", "", 1))
    assert bash_syntax_error(broken) != ""


# --- the README's call --------------------------------------------------------------------

def test_the_readme_call_fits_the_device_and_names_real_files() -> None:
    call = readme_run_call((CHECK / "README.md").read_text())
    assert call_problems(call, ROOT, (CHECK / "prepare.sh").read_text()) == []
    assert ".gpu" in call["carry"]  # type: ignore[operator]


@pytest.mark.parametrize(("change", "expected"), [
    ({"command": "bash packaging/gpu-check/run.sh; " + "x" * MAX_COMMAND}, "characters"),
    ({"command": "bash packaging/gpu-check/rnu.sh"}, "does not exist"),
    ({"carry": [".gpu", ".whl"]}, "not made by prepare.sh"),
    ({"carry": [f"p{i}" for i in range(MAX_CARRY + 1)]}, "at most"),
    ({"timeout_s": MAX_TIMEOUT_S + 1}, "timeout_s"),
])
def test_a_bad_call_is_caught(change: dict[str, object], expected: str) -> None:
    call = {**readme_run_call((CHECK / "README.md").read_text()), **change}
    problems = call_problems(call, ROOT, (CHECK / "prepare.sh").read_text())
    assert any(expected in p for p in problems), problems


def test_the_readme_without_a_call_is_caught() -> None:
    with pytest.raises(ValueError, match="run-call"):
        readme_run_call("# nothing here\n```json\n{}\n```\n")


# --- what comes back ----------------------------------------------------------------------

def test_run_returns_no_more_files_than_the_device_sends_back() -> None:
    files = returned_files((CHECK / "run.sh").read_text())
    assert {"build.log", "bench.log", "summary.txt", "bench-e64-greedy.json"} <= set(files)
    assert len(files) <= MAX_RETURNED_FILES, files
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", f) for f in files), files


def test_too_many_returned_files_are_counted() -> None:
    text = (CHECK / "run.sh").read_text()
    more = re.sub(r"^for run in (.+); do$", r"for run in \1 e256:greedy e256:sampled; do", text, flags=re.M)
    assert len(returned_files(more)) == len(returned_files(text)) + 2 > MAX_RETURNED_FILES


# --- the summary reports the benchmark's figures -----------------------------------------

def test_summary_reports_the_files_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mode = {"tok_per_s_median": 1234.5, "speedup_median": 1.5, "host_share_median": 0.042,
            "host_share_step_median": 0.041, "host_share_step_p90": 0.07, "draft_host_share_median": 0.013,
            "host_us_per_step_median": 81.0, "step_us_median": 1950.0, "ttft_s_median": 0.0123,
            "acceptance": 0.66, "identical": "9/9"}
    for name, temp in (("bench-e160-greedy", 0.0), ("bench-e64-greedy", 0.0), ("bench-e64-sampled", 0.8)):
        (tmp_path / f"{name}.json").write_text(json.dumps({
            "setup": {"target": f"/m/{name}.gguf", "backend": "CUDA0", "threads": 16, "repeat": 3,
                      "sampling": {"temperature": temp, "seed": 7}},
            "runs": [{}] * 27, "summary": {"chain:3": mode}}))
    phases = tmp_path / "phases.tsv"
    phases.write_text("wheels\t2\tok\nbuild\t250\tok\n")
    assert load_summary().main(["--out", str(tmp_path), "--phases", str(phases), "--cpu", "1",
                                "--layers", "99", "--note", "complete"]) == 0
    text = capsys.readouterr().out
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("chain:3"))
    for cell in ("1234.5", "1.50", "4.2%", "4.1%", "7.0%", "1.3%", "81", "1950", "0.012", "66%", "9/9"):
        assert cell in row.split(), (cell, row)
    assert "build                  250 s  ok" in text and "(phases together)      252 s" in text
    heads = [ln.split(":")[0] for ln in text.splitlines() if ln.startswith("bench-")]
    assert heads == ["bench-e64-greedy", "bench-e64-sampled", "bench-e160-greedy"]
    assert "backend CUDA0, 16 threads, greedy" in text and "T 0.8, seed 7" in text


def test_summary_shows_a_failed_builds_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["noise"] * 200 + ["CMake Error at ggml-cuda/CMakeLists.txt:178 (target_link_libraries):"] \
        + ["more noise"] * 100 + ["ERROR: Failed building wheel for llama_cpp_python"]
    (tmp_path / "build.log").write_text("\n".join(lines))
    load_summary().main(["--out", str(tmp_path), "--note", "llama-cpp-python's build failed (exit 1)"])
    text = capsys.readouterr().out
    assert "CMake Error at ggml-cuda/CMakeLists.txt:178" in text
    assert text.rstrip().endswith("ERROR: Failed building wheel for llama_cpp_python")


def test_summary_shows_the_end_of_bench_log_when_a_benchmark_failed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bench.log").write_text("\n".join(["fine"] * 50 + ["OSError: libcublas.so.13: cannot open"]))
    load_summary().main(["--out", str(tmp_path), "--note", "llama_cpp does not import or offload"])
    assert "OSError: libcublas.so.13: cannot open" in capsys.readouterr().out
    load_summary().main(["--out", str(tmp_path), "--note", "complete"])
    assert "libcublas" not in capsys.readouterr().out
