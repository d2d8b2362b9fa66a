#!/usr/bin/env bash
# Set everything up (scripts/setup.sh), then run the whole test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
# The code checks first (configured in pyproject.toml; docs/architecture.md, "Checks"): a slip fails fast.
"$ROOT/.venv/bin/ruff" format --check --quiet .
"$ROOT/.venv/bin/ruff" check --quiet exo_core exo_edge device
"$ROOT/.venv/bin/mypy"
exec "$ROOT/.venv/bin/python" -m pytest "$@"
