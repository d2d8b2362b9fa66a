#!/usr/bin/env bash
# Build one release folder: install-release.sh SRC DEST -> DEST/src (a copy of SRC
# without its .git, .venv and caches) and DEST/venv (the project installed into a
# fresh virtual environment, with the device extra). EXO_EDGE=1 also installs the
# edge runtime (llama-cpp-python is compiled: slow on a board, slower under qemu).
set -euo pipefail
SRC="$(cd "${1:?usage: install-release.sh SRC DEST}" && pwd)"
DEST="${2:?usage: install-release.sh SRC DEST}"
PY="${PYTHON:-python3}"
mkdir -p "$DEST/src"
tar -C "$SRC" --exclude=.git --exclude=.venv --exclude=__pycache__ --exclude='*.egg-info' \
    --exclude=.pytest_cache --exclude=.hypothesis --exclude=.exo-run -cf - . | tar -C "$DEST/src" -xf -
"$PY" -m venv "$DEST/venv"
# Editable: the release keeps its sources, and exo_core finds store_template/ beside its package.
"$DEST/venv/bin/python" -m pip install --quiet --no-cache-dir -e "$DEST/src[device]"
if [ "${EXO_EDGE:-0}" = "1" ] && [ -x "$DEST/src/scripts/install_edge.sh" ]; then
  "$DEST/src/scripts/install_edge.sh" "$DEST/venv/bin/python"
fi
"$DEST/venv/bin/exo" --help >/dev/null
