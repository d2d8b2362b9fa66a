#!/usr/bin/env bash
# Set up everything Exo needs on a fresh machine, idempotently:
# a virtual environment in .venv, the project and its test/device extras,
# the edge runtime (llama-cpp-python built once per machine with safe flags,
# onnxruntime, tokenizers), the laptop extra (llama-cpp-python's server, for
# `exo models serve` and the engine tests) and the model files (`exo models fetch`).
#
# Environment: EXO_SKIP_EDGE=1 skips the edge runtime and models (core only).
# The models fetched are what the test suite needs: the standard board's
# Qwen2.5-Coder 0.5B Instruct, the small board's Gemma 3 270M and the embedder.
# EXO_FETCH_LARGE=1 also fetches the laptop board's Qwen2.5-Coder 1.5B (1.1 GB).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EXO_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

"$ROOT/scripts/install_system.sh"

if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "setup: Python 3.11 or newer is needed (found $("$PY" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
echo "setup: installing exo-edge with its test, device and laptop extras"
# `laptop` lists the packages of llama-cpp-python's [server] extra, not llama-cpp-python[server]
# itself, so this never builds llama-cpp-python (install_edge.sh does, with the right flags).
"$VENV/bin/python" -m pip install --quiet -e "$ROOT[test,device,laptop]" 2>&1 | grep -v '^WARNING: Location' || true
"$VENV/bin/python" -c 'import exo_core, aiohttp, nacl, numpy, pytest, hypothesis' \
  || { echo "setup: core dependencies failed to install" >&2; exit 1; }

if [ "${EXO_SKIP_EDGE:-0}" != "1" ]; then
  # llama-cpp-python is built once per machine with flags that are safe here (see docs/models.md).
  "$ROOT/scripts/install_edge.sh" "$VENV/bin/python"
  echo "setup: fetching models (offline when cached)"
  models=(qwen2.5-coder-0.5b-instruct gemma-3-270m paraphrase-minilm-l3-v2)
  if [ "${EXO_FETCH_LARGE:-0}" = "1" ]; then
    models+=(qwen2.5-coder-1.5b-instruct)
  fi
  "$VENV/bin/exo" models fetch "${models[@]}"
fi
echo "setup: done ($VENV)"
