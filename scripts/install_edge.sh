#!/usr/bin/env bash
# Install the edge runtime (llama-cpp-python, onnxruntime, tokenizers) into a
# virtual environment, building llama-cpp-python once per machine.
#
#   scripts/install_edge.sh VENV_PYTHON
#
# llama-cpp-python ships on PyPI as source only. Its default build enables
# every instruction set the build machine reports; on machines with AMX the
# result segfaults in ggml_backend_amx_mul_mat while decoding. We therefore
# build with portable flags, and keep the wheel in a cache directory keyed by
# the version AND the flags (pip's own wheel cache is keyed without the flags,
# so we never let pip reuse or fill it: --no-cache-dir --no-binary).
#
# Idempotent: when the venv already has the right llama-cpp-python built with
# these flags, and onnxruntime and tokenizers import, it does nothing.
# Environment:
#   EXO_WHEEL_CACHE   wheel cache root (default ~/.cache/exo/wheels)
#   EXO_LLAMA_VERSION llama-cpp-python version (default below)
#   EXO_BUILD_JOBS    parallel compile jobs (default: nproc)
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 VENV_PYTHON" >&2
    exit 2
fi
PY="$1"
if ! "$PY" -c 'import sys' 2>/dev/null; then
    echo "install_edge: '$PY' is not a runnable Python; pass the venv's python" >&2
    exit 2
fi

LLAMA_VERSION="${EXO_LLAMA_VERSION:-0.3.36}"
ONNXRUNTIME_SPEC="onnxruntime>=1.17"
TOKENIZERS_SPEC="tokenizers>=0.15"
# onnx: used only by `exo models fetch` (onnxruntime.quantization needs it to
# write the int8 embedder); not imported at run time.
ONNX_SPEC="onnx>=1.15"
CMAKE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
FLAG_HASH="$(printf '%s' "$CMAKE_FLAGS" | sha256sum | cut -c1-16)"
CACHE_ROOT="${EXO_WHEEL_CACHE:-$HOME/.cache/exo/wheels}"
WHEEL_DIR="$CACHE_ROOT/$FLAG_HASH/llama-cpp-python-$LLAMA_VERSION"
MARKER_NAME="exo_llama_build_flags.txt"

log() { echo "install_edge: $*" >&2; }

# 1. Is the right llama-cpp-python, built by us with these flags, installed?
installed_ok() {
    "$PY" - "$LLAMA_VERSION" "$FLAG_HASH" "$MARKER_NAME" <<'EOF'
import importlib.metadata as md, pathlib, sys
want, flag_hash, marker = sys.argv[1:4]
try:
    dist = md.distribution("llama-cpp-python")
except md.PackageNotFoundError:
    sys.exit(1)
if dist.version != want:
    sys.exit(1)
site = pathlib.Path(dist.locate_file(""))
mark = site / "llama_cpp" / marker
sys.exit(0 if mark.is_file() and mark.read_text().strip() == flag_hash else 1)
EOF
}

if installed_ok; then
    log "llama-cpp-python $LLAMA_VERSION (flags $FLAG_HASH) already installed"
else
    shopt -s nullglob
    wheels=("$WHEEL_DIR"/llama_cpp_python-*.whl)
    shopt -u nullglob
    if [[ ${#wheels[@]} -eq 0 ]]; then
        log "building llama-cpp-python $LLAMA_VERSION with: $CMAKE_FLAGS"
        log "(compiles llama.cpp from source; about 5 minutes on 2 cores)"
        mkdir -p "$WHEEL_DIR"
        tmp="$(mktemp -d "$WHEEL_DIR/.build.XXXXXX")"
        jobs="${EXO_BUILD_JOBS:-$(nproc)}"
        # pip installs the build dependencies (scikit-build-core, cmake) in an
        # isolated env; --no-cache-dir keeps pip from storing/reusing a wheel
        # keyed without our flags.
        CMAKE_ARGS="$CMAKE_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" FORCE_CMAKE=1 \
            "$PY" -m pip wheel --no-cache-dir --no-deps --no-binary llama-cpp-python \
            --wheel-dir "$tmp" "llama-cpp-python==$LLAMA_VERSION"
        mv "$tmp"/llama_cpp_python-*.whl "$WHEEL_DIR"/
        rmdir "$tmp"
        printf '%s\n' "$CMAKE_FLAGS" > "$WHEEL_DIR/FLAGS"
        wheels=("$WHEEL_DIR"/llama_cpp_python-*.whl)
    else
        log "reusing cached wheel ${wheels[0]}"
    fi
    # --force-reinstall on the one wheel only: replaces a plain (AMX) build.
    "$PY" -m pip install --no-cache-dir --force-reinstall --no-deps "${wheels[0]}"
    # Its runtime dependencies, resolved normally.
    "$PY" -m pip install "numpy>=1.26" "typing-extensions>=4.5" "diskcache>=5.6.1" "jinja2>=2.11.3"
    site="$("$PY" -c 'import importlib.metadata as m, pathlib; print(pathlib.Path(m.distribution("llama-cpp-python").locate_file("")) / "llama_cpp")')"
    printf '%s\n' "$FLAG_HASH" > "$site/$MARKER_NAME"
    log "installed llama-cpp-python $LLAMA_VERSION (flags $FLAG_HASH)"
fi

# 2. onnxruntime, tokenizers and onnx: binary wheels from PyPI.
if "$PY" -c 'import onnxruntime, tokenizers, onnx' 2>/dev/null; then
    log "onnxruntime, tokenizers and onnx already installed"
else
    "$PY" -m pip install "$ONNXRUNTIME_SPEC" "$TOKENIZERS_SPEC" "$ONNX_SPEC"
fi

log "edge runtime ready"
