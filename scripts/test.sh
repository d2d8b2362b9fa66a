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
# The layer contracts ([tool.importlinter] in pyproject.toml; docs/architecture.md, "Layers").
"$ROOT/.venv/bin/lint-imports"
# Two workers: most tests wait on processes, sockets and the disk, so on 2 cores the suite takes about
# half as long (docs/architecture.md, "Checks"). `scripts/test.sh -n 0` runs it in one process.
exec "$ROOT/.venv/bin/python" -m pytest -n 2 "$@"
