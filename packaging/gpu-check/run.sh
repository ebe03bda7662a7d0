#!/usr/bin/env bash
# The GPU check of the 152k-vocabulary proxies: runs ON the device machine, from the
# repository root, with .gpu/ (made by prepare.sh) carried beside the tree. It
#   1. installs the carried wheels into $SITE (/tmp/site),
#   2. builds llama-cpp-python from .gpu/llama-cpp-python with CUDA for sm_90 (time-boxed),
#   3. generates the proxies (n_embd 64, the issue's shape, and 160) with specula_tools.vocab_proxy,
#   4. runs `specula bench` plain / chain:3 / adaptive with every layer offloaded, greedy and
#      sampled, 3 prompts x 64 tokens x 3 repeats, one JSON per run,
#   5. writes $OUT/summary.txt (tok/s, host share, step us per mode; device; phase times).
# Everything it returns is under $OUT: build.log, bench.log, summary.txt, four JSON files
# (7 files; the device returns at most 8). The whole script ends inside BUDGET_S seconds.
#
# SPECULA_GPU_CHECK_CPU=1 builds with CUDA off and benches with 0 GPU layers: the same
# script as a dry run on a machine without a GPU. SPECULA_GPU_CHECK_REUSE=1 skips the build
# when $SITE already holds llama_cpp (re-runs of a dry run).
set -uo pipefail

T0=$(date +%s)
PY=${PYTHON:-python3}
: "${OUT:?set OUT to the folder the results go to}"
CPU=${SPECULA_GPU_CHECK_CPU:-0}
SITE=${SITE:-/tmp/site}
WORK=${GPU_CHECK_WORK:-/tmp/gpucheck}
if [ "$CPU" = 1 ]; then
    BUDGET_S=${BUDGET_S:-7200} BUILD_S=${BUILD_S:-5400} LAYERS=0 JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
else
    # the device call's limit is 600 s; the benchmarks take about a minute on a CPU core
    BUDGET_S=${BUDGET_S:-540} BUILD_S=${BUILD_S:-390} LAYERS=99 JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
fi
DEADLINE=$((T0 + BUDGET_S))
ROOT=$(pwd)
mkdir -p "$OUT" "$WORK"
# Specula's data folder (the adaptive policy's learned state, n-gram caches): a fresh one
# for the check, so that nothing from an earlier use of the machine steers it. Within the
# check, a proxy's sampled run starts from what its greedy run learned (a second session).
SPECULA_HOME=$(mktemp -d "${TMPDIR:-/tmp}/gpucheck-home.XXXXXX")
export SPECULA_HOME
PHASES=$WORK/phases.tsv  # folded into summary.txt
: >"$PHASES"
log() { echo "[gpu-check $(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/bench.log" >&2; }
phase() { echo "$1	$2	$3" >>"$PHASES"; }  # name, seconds, status
left() { echo $(( DEADLINE - $(date +%s) )); }
# timeout runs its command in a process group of its own: a TERM or INT to this script is
# passed on to it (timeout hands it to the whole group: pip, CMake, nvcc), so that nothing
# outlives the script
CHILD=""
limited() {  # limited SECONDS COMMAND...: the command's exit status, 124 when it ran out
    local secs=$1; shift
    timeout --kill-after=10 "$secs" "$@" &
    CHILD=$!
    wait "$CHILD"
    local rc=$?
    CHILD=""
    return $rc
}
trap '[ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null; exit 143' TERM INT
summary() {
    "$PY" "$ROOT/packaging/gpu-check/summary.py" --out "$OUT" --phases "$PHASES" --cpu "$CPU" \
        --layers "$LAYERS" --note "$1" >"$OUT/summary.txt" 2>>"$OUT/bench.log" \
        || echo "summary failed: see bench.log; $1" >"$OUT/summary.txt"

    cat "$OUT/summary.txt"
}

[ -d .gpu/llama-cpp-python ] && [ -d .gpu/wheels ] && [ -d app/specula ] \
    || { echo "run from the repository root with .gpu/ carried (bash packaging/gpu-check/prepare.sh)" >&2; exit 2; }

# 1. wheels
t=$(date +%s)
mkdir -p "$SITE"
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    .gpu/wheels/*.whl >>"$OUT/bench.log" 2>&1 || { phase wheels $(( $(date +%s) - t )) failed; summary "wheel install failed"; exit 1; }
export PYTHONPATH=$SITE:$ROOT/app
phase wheels $(( $(date +%s) - t )) ok

# 2. llama-cpp-python
if [ "$CPU" = 1 ]; then
    CMAKE_ARGS="-DGGML_CUDA=OFF"
else
    nvidia-smi >>"$OUT/bench.log" 2>&1
    # cuBLAS and libcuda where a toolkit of nvcc alone lacks them (sets CUDA_CMAKE_ARGS and
    # LD_LIBRARY_PATH, which the benchmarks then inherit)
    # shellcheck source=packaging/gpu-check/cuda_env.sh
    . "$ROOT/packaging/gpu-check/cuda_env.sh" >>"$OUT/bench.log" 2>&1
    # FlashAttention's kernels off by default, to keep the build short (llama.cpp's auto
    # setting then runs attention unfused on the GPU); SPECULA_GPU_CHECK_FA=1 builds them
    # (measured here: about 150 more core-seconds, ~10 s on 16 cores; see the README)
    fa=OFF; [ "${SPECULA_GPU_CHECK_FA:-0}" = 1 ] && fa=ON
    CMAKE_ARGS="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_FA=$fa $CUDA_CMAKE_ARGS"
fi
export CMAKE_ARGS="$CMAKE_ARGS -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_CCACHE=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
t=$(date +%s)
if [ "${SPECULA_GPU_CHECK_REUSE:-0}" = 1 ] && [ -d "$SITE/llama_cpp/lib" ]; then
    log "llama-cpp-python: reusing $SITE/llama_cpp"
    phase build 0 reused
else
    rm -rf "$SITE"/llama_cpp "$SITE"/llama_cpp_python-*.dist-info "$WORK/src"
    # built from a copy: its CMake also installs the libraries into the source tree
    cp -a .gpu/llama-cpp-python "$WORK/src"
    # what the budget leaves after the proxies and the benchmarks (~150 s), at most BUILD_S
    budget=$(( BUILD_S < $(left) - 150 ? BUILD_S : $(left) - 150 ))
    log "building llama-cpp-python ($CMAKE_ARGS, -j$JOBS, at most ${budget}s)"
    {
        echo "CMAKE_ARGS=$CMAKE_ARGS"; command -v nvcc && nvcc --version; cmake --version | head -1
        limited "$budget" "$PY" -m pip install -v --no-build-isolation --no-deps \
            --no-index --no-cache-dir --target "$SITE" "$WORK/src"
    } >"$OUT/build.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - t ))
    if [ $rc -ne 0 ]; then
        if [ $rc -ge 124 ]; then why="ran out of its ${budget}s budget"; else why="failed (exit $rc)"; fi
        phase build "$secs" "$why"
        log "build $why after ${secs}s: see build.log"
        summary "llama-cpp-python's build $why; nothing was benchmarked"
        exit 3
    fi
    phase build "$secs" ok
    log "built in ${secs}s"
fi
"$PY" - >>"$OUT/bench.log" 2>&1 <<'PYEOF' || { phase import 0 failed; summary "llama_cpp does not import or offload: see bench.log"; exit 4; }
import os, sys
import llama_cpp
print("llama_cpp", llama_cpp.__version__, "from", llama_cpp.__file__)
print("gpu offload:", bool(llama_cpp.llama_supports_gpu_offload()))
if os.environ.get("SPECULA_GPU_CHECK_CPU", "0") != "1" and not llama_cpp.llama_supports_gpu_offload():
    sys.exit("this build cannot offload: no CUDA device answered, or the CUDA backend is missing")
PYEOF

# 3. the proxies
t=$(date +%s)
for e in 64 160; do
    "$PY" -m specula_tools.vocab_proxy "$WORK/models-e$e" --n-embd $e >>"$OUT/bench.log" 2>&1 \
        || { phase proxies $(( $(date +%s) - t )) failed; summary "the proxies were not built: see bench.log"; exit 5; }
done
phase proxies $(( $(date +%s) - t )) ok

# 4. the benchmarks, the issue's shape first; each one gets what is left of the budget
SAMPLED="--temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --seed 7"
status=0
for run in e64:greedy e64:sampled e160:greedy e160:sampled; do
    e=${run%%:*} kind=${run##*:}
    budget=$(( $(left) - 20 ))
    if [ "$budget" -lt 30 ]; then phase "bench-$e-$kind" 0 "skipped (no time left)"; status=6; continue; fi
    args=""; [ "$kind" = sampled ] && args=$SAMPLED
    log "bench $e $kind (at most ${budget}s)"
    t=$(date +%s)
    # shellcheck disable=SC2086
    limited "$budget" "$PY" -c \
        "import sys; from specula.cli import main; rc = main(sys.argv[1:]); qt = sorted(m for m in sys.modules if m.startswith(('PySide6', 'shiboken6'))); print('Qt modules imported:', qt or 'none', file=sys.stderr); sys.exit(rc or (7 if qt else 0))" \
        bench --target "$WORK/models-$e/proxy-152k.gguf" --draft "$WORK/models-$e/proxy-152k-draft.gguf" \
        --gpu-layers $LAYERS --draft-gpu-layers $LAYERS --modes plain,chain:3,adaptive \
        --limit 3 --max-tokens 64 --repeat 3 $args --json "$OUT/bench-$e-$kind.json" \
        >>"$OUT/bench.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then phase "bench-$e-$kind" $(( $(date +%s) - t )) ok
    else phase "bench-$e-$kind" $(( $(date +%s) - t )) "failed (exit $rc)"; status=6; fi
done

# 5. the summary
summary "$([ $status = 0 ] && echo "complete" || echo "incomplete: see the phases and bench.log")"
exit $status
