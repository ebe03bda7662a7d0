#!/usr/bin/env bash
# Prepares everything the GPU check needs on a machine with no network, in .gpu/ at the
# repository root (git ignores it through .git/info/exclude; the device call carries it):
#   .gpu/llama-cpp-python/  llama-cpp-python's source, trimmed to the llama and ggml
#                           libraries with the CPU and CUDA backends (no docs, models, tests,
#                           tools, mtmd, other backends): what CMake needs and nothing else
#   .gpu/wheels/            wheels of the Python packages the device lacks
# Run from the repository root, here, where pip reaches the package index:
#   bash packaging/gpu-check/prepare.sh
# LLAMA_SDIST may name an unpacked llama_cpp_python-0.3.36 source folder (else pip fetches it).
set -euo pipefail

VERSION=0.3.36
PY=${PYTHON:-python3}
ROOT=$(pwd)
[ -f pyproject.toml ] && [ -d app/specula ] || { echo "run from the repository root" >&2; exit 2; }
GPU=$ROOT/.gpu
mkdir -p "$GPU"

# 1. ignored by git, so the tree's tracked size stays what it is
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"

# 2. the source: an unpacked sdist, fetched if not given
src=${LLAMA_SDIST:-}
if [ -z "$src" ]; then
    dl=$(mktemp -d)
    trap 'rm -rf "$dl"' EXIT
    "$PY" -m pip download -q --no-deps --no-binary llama-cpp-python -d "$dl" "llama-cpp-python==$VERSION"
    tar -xzf "$dl"/llama_cpp_python-"$VERSION".tar.gz -C "$dl"
    src=$dl/llama_cpp_python-$VERSION
fi
[ -f "$src/llama_cpp/__init__.py" ] && grep -q "__version__ = \"$VERSION\"" "$src/llama_cpp/__init__.py" \
    || { echo "$src is not llama-cpp-python $VERSION's source" >&2; exit 2; }

dst=$GPU/llama-cpp-python
rm -rf "$dst"
mkdir -p "$dst/vendor/llama.cpp/ggml/src"
# the Python package and what scikit-build-core reads (the readme is the metadata's)
cp -a "$src"/{CMakeLists.txt,pyproject.toml,README.md,LICENSE.md,llama_cpp} "$dst"/
rm -rf "$dst"/llama_cpp/lib  # a build's leftovers, if the source was used before
L=$src/vendor/llama.cpp
D=$dst/vendor/llama.cpp
# llama.cpp: the top CMake files, the library (src, include), common (llama-cpp-python
# builds it), the vendored headers common and CMake's vendor/CMakeLists.txt name, licenses
cp -a "$L"/{CMakeLists.txt,LICENSE,cmake,common,include,src,vendor,licenses} "$D"/
# ggml: everything but its tests and examples and the backends not built here
cp -a "$L"/ggml/{CMakeLists.txt,cmake,include} "$D"/ggml/
for f in "$L"/ggml/src/*; do
    name=$(basename "$f")
    case $name in
        ggml-*) [ -d "$f" ] || { cp -a "$f" "$D/ggml/src/"; continue; }
                case $name in ggml-cpu|ggml-cuda) cp -a "$f" "$D/ggml/src/" ;; esac ;;
        *) cp -a "$f" "$D/ggml/src/" ;;
    esac
done
# the CUDA backend's Python generator of template instances is not run by CMake
rm -f "$D"/ggml/src/ggml-cuda/template-instances/generate_cu_files.py

# 3. wheels for what the device lacks (its image has numpy, jinja2, psutil, requests,
#    huggingface-hub, typing-extensions, pyyaml, tqdm, scikit-build-core, cmake, ninja):
#    gguf, platformdirs (Specula), diskcache (llama-cpp-python), and scikit-build-core
#    itself so that the build does not depend on the image's version (the versions are
#    the ones the project's development environment runs)
whl=$GPU/wheels
rm -rf "$whl"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$whl" "gguf==0.19.0" "platformdirs==4.14.9" "diskcache==5.6.3" "scikit-build-core==1.1.2"

echo "prepared $GPU:"
for d in "$GPU" "$dst" "$whl"; do du -sb "$d"; done | sed 's/^/  /'
ls "$whl" | sed 's/^/  /'
# what a call sends: tracked files, untracked files git does not ignore, and .gpu
tree=$( (git ls-files -z --cached --others --exclude-standard | du --files0-from=- -cb 2>/dev/null || true) \
       | tail -1 | cut -f1)
total=$(( tree + $(du -sb "$GPU" | cut -f1) ))
echo "  the tree (tracked and untracked, not ignored) $tree bytes; with .gpu $total bytes" \
     "of the 64 MiB (67108864) a call carries"
[ "$total" -lt 50000000 ] || { echo "too large for one call: trim more" >&2; exit 1; }
