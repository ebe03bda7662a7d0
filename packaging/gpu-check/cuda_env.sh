# Sourced by run.sh before a CUDA build: finds what llama.cpp's CMake needs from CUDA and
# sets CUDA_CMAKE_ARGS (extra -D flags) and LD_LIBRARY_PATH. A full toolkit needs nothing;
# a toolkit of nvcc and cudart alone (as on this project's development image) lacks
#   - cuBLAS: then the headers and libraries of the nvidia-cublas wheel that PyTorch
#     installs (site-packages/nvidia/cu13/{include,lib}, or nvidia/cublas/ for CUDA 12)
#     are used, through unversioned links CMake's find_library can see;
#   - libcuda.so (the driver API, for ggml's virtual-memory pool): the driver's own
#     library is linked where one is found, else the build uses GGML_CUDA_NO_VMM (ggml's
#     plain pool; the same kernels).
# Expects PY (the Python whose site-packages to search) and WORK (a scratch folder).
CUDA_CMAKE_ARGS=""
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
_nvcc=$(command -v nvcc || true)
# the toolkit's root: nvcc may be a link or a wrapper script (then nvcc itself says where)
_cuda_root=${CUDA_HOME:-${CUDA_PATH:-}}
[ -z "$_cuda_root" ] && [ -n "$_nvcc" ] && _cuda_root=$(nvcc --dryrun --version 2>&1 | sed -n 's/^#\$ TOP=//p' | head -1)
[ -z "$_cuda_root" ] && _cuda_root=/usr/local/cuda
_cuda_root=$(cd "$_cuda_root" 2>/dev/null && pwd -P || echo "$_cuda_root")
_shim=$WORK/cuda-links
mkdir -p "$_shim"

_has_cublas=0
for _d in "$_cuda_root/include" "$_cuda_root/targets/x86_64-linux/include" /usr/include; do
    [ -f "$_d/cublas_v2.h" ] && _has_cublas=1 && break
done
if [ $_has_cublas = 0 ]; then
    _inc=$("$PY" - <<'PYEOF'
import glob, os, sys
for p in sys.path:
    hits = sorted(glob.glob(os.path.join(p, "nvidia", "*", "include", "cublas_v2.h")))
    if hits:
        print(os.path.dirname(hits[-1]))
        break
PYEOF
)
    if [ -n "$_inc" ] && ls "$_inc"/../lib/libcublas.so.* >/dev/null 2>&1; then
        _lib=$(cd "$_inc/../lib" && pwd)
        for _n in cublas cublasLt; do
            _so=$(ls "$_lib"/lib$_n.so.* | head -1)
            ln -sf "$_so" "$_shim/lib$_n.so"
            CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DCUDA_${_n}_LIBRARY=$_shim/lib$_n.so"
        done
        CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DCMAKE_CUDA_FLAGS=-I$_inc"
        export LD_LIBRARY_PATH=$_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        echo "cuda_env: cuBLAS from $_lib (headers $_inc)"
    else
        echo "cuda_env: no cuBLAS found (neither in $_cuda_root nor in a Python nvidia package): the build will fail" >&2
    fi
fi

_libcuda=""
for _d in "$_cuda_root/lib64/stubs" "$_cuda_root/targets/x86_64-linux/lib/stubs" "$_cuda_root/lib64" \
          /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    for _f in "$_d/libcuda.so" "$_d/libcuda.so.1"; do
        [ -e "$_f" ] && _libcuda=$_f && break 2
    done
done
[ -z "$_libcuda" ] && _libcuda=$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -1)
if [ -n "$_libcuda" ]; then
    case $_libcuda in
        */libcuda.so) ;;
        *) ln -sf "$_libcuda" "$_shim/libcuda.so"; _libcuda=$_shim/libcuda.so ;;
    esac
    CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DCUDA_cuda_driver_LIBRARY=$_libcuda"
    echo "cuda_env: driver API from $_libcuda"
else
    CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DGGML_CUDA_NO_VMM=ON"
    echo "cuda_env: no libcuda.so found: GGML_CUDA_NO_VMM=ON"
fi
unset _nvcc _cuda_root _shim _has_cublas _inc _lib _n _so _libcuda _d _f
