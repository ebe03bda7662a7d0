# Sourced by run.sh before a CUDA build: finds what llama.cpp's CMake needs from CUDA and
# sets CUDA_CMAKE_ARGS (extra -D flags) and LD_LIBRARY_PATH. A full toolkit needs nothing.
# A toolkit of nvcc and cudart alone (as on this project's development image), or one from
# NVIDIA's wheels, lacks some of it:
#   - cuBLAS's headers: then those of the nvidia-cublas wheel that PyTorch installs
#     (site-packages/nvidia/cu13/include, or nvidia/cublas/include for CUDA 12);
#   - the unversioned libcudart.so / libcublas.so / libcublasLt.so that CMake's
#     find_library looks for (wheels ship only libX.so.13): then links to the versioned
#     ones, passed as CUDA_<name>_LIBRARY, their folder put on LD_LIBRARY_PATH;
#   - libcuda.so (the driver API, for ggml's virtual-memory pool): the driver's own library
#     or the toolkit's stub is linked where one is found, else the build uses
#     GGML_CUDA_NO_VMM (ggml's plain pool; the same kernels).
# Expects PY (the Python whose site-packages to search) and WORK (a scratch folder).
CUDA_CMAKE_ARGS=""
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
# the toolkit's root: nvcc may be a link or a wrapper script (then nvcc itself says where)
_cuda_root=${CUDA_HOME:-${CUDA_PATH:-}}
[ -z "$_cuda_root" ] && command -v nvcc >/dev/null \
    && _cuda_root=$(nvcc --dryrun --version 2>&1 | sed -n 's/^#\$ TOP=//p' | head -1)
[ -z "$_cuda_root" ] && _cuda_root=/usr/local/cuda
_cuda_root=$(cd "$_cuda_root" 2>/dev/null && pwd -P || echo "$_cuda_root")
_shim=$WORK/cuda-links
mkdir -p "$_shim"
# the Python packages' nvidia/<part>/ folders (PyTorch's CUDA wheels), newest name last
_wheel_dirs=$("$PY" - <<'PYEOF'
import glob, os, sys
seen = []
for p in sys.path:
    for d in sorted(glob.glob(os.path.join(p, "nvidia", "*"))):
        if os.path.isdir(d) and d not in seen:
            seen.append(d)
print("\n".join(seen))
PYEOF
)

_inc=""
for _d in "$_cuda_root/include" "$_cuda_root/targets/x86_64-linux/include" /usr/include; do
    [ -f "$_d/cublas_v2.h" ] && _inc=$_d && break
done
if [ -z "$_inc" ]; then
    for _d in $_wheel_dirs; do [ -f "$_d/include/cublas_v2.h" ] && _inc=$_d/include; done
    if [ -n "$_inc" ]; then
        CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DCMAKE_CUDA_FLAGS=-I$_inc"
        echo "cuda_env: cuBLAS headers from $_inc"
    else
        echo "cuda_env: no cublas_v2.h (neither in $_cuda_root nor in a Python nvidia package): the build will fail" >&2
    fi
fi

_toolkit_libs="$_cuda_root/lib64 $_cuda_root/lib $_cuda_root/targets/x86_64-linux/lib"
for _n in cudart cublas cublasLt; do
    _found=""
    for _d in $_toolkit_libs; do [ -e "$_d/lib$_n.so" ] && _found=$_d/lib$_n.so && break; done
    [ -n "$_found" ] && continue  # CMake finds it itself
    for _d in $_toolkit_libs ${_inc:+$_inc/../lib} $(for _w in $_wheel_dirs; do echo "$_w/lib"; done); do
        _so=$(ls "$_d"/lib$_n.so.[0-9]* 2>/dev/null | sort -V | tail -1)
        [ -n "$_so" ] && break
    done
    if [ -n "$_so" ]; then
        _lib=$(cd "$(dirname "$_so")" && pwd -P)
        ln -sf "$_lib/$(basename "$_so")" "$_shim/lib$_n.so"
        # the versioned name too: CMake puts this folder on the libraries' RUNPATH, so they
        # find libX.so.13 there even without LD_LIBRARY_PATH
        ln -sf "$_lib/$(basename "$_so")" "$_shim/$(basename "$_so")"
        CUDA_CMAKE_ARGS="$CUDA_CMAKE_ARGS -DCUDA_${_n}_LIBRARY=$_shim/lib$_n.so"
        case ":${LD_LIBRARY_PATH:-}:" in *":$_lib:"*) ;; *) export LD_LIBRARY_PATH=$_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;; esac
        echo "cuda_env: lib$_n from $_so"
    else
        echo "cuda_env: no lib$_n.so found: the build will fail" >&2
    fi
done

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
echo "cuda_env: toolkit $_cuda_root; extra CMake arguments:$CUDA_CMAKE_ARGS"
unset _cuda_root _shim _wheel_dirs _inc _toolkit_libs _n _found _d _so _lib _w _libcuda _f
