#!/usr/bin/env bash
# Set everything up (scripts/setup.sh), then run Exo with its embedded defaults:
# a fresh Exo home from store_template/, the local model, exod and the chat
# client. With a terminal you chat; without one a short scripted conversation
# runs and the command exits 0.
#
# EXO_HOME selects the home (default: ./.exo-run, made fresh when missing).
# The home gets the `standard` board profile (Qwen2.5-Coder 0.5B Instruct, the
# 2-8 GB boards' model), whatever this machine's memory; EXO_BOARD=small or
# laptop chooses another (docs/models.md, Board profiles).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
export EXO_HOME="${EXO_HOME:-$ROOT/.exo-run}"
EXO="$ROOT/.venv/bin/exo"
"$EXO" init --board "${EXO_BOARD:-standard}"
if [ -t 0 ]; then
  exec "$EXO" chat "$@"
fi
printf '%s\n' \
  "Hello! What can you help me with?" \
  "What is the capital of France?" \
  "/sessions" \
  | "$EXO" chat "$@"
