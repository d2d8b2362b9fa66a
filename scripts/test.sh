#!/usr/bin/env bash
# Set everything up (scripts/setup.sh), then run the whole test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
# The code checks first (configured in pyproject.toml): a formatting slip fails fast.
"$ROOT/.venv/bin/ruff" format --check --quiet .
exec "$ROOT/.venv/bin/python" -m pytest "$@"
