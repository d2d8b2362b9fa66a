"""Small board first: what the CLI imports at start (the old line budget is retired: docs/architecture.md, "Checks")."""

from __future__ import annotations

import subprocess
import sys

from exo_testkit import ROOT


def test_the_cli_imports_nothing_heavy_at_start() -> None:
    code = (
        "import sys, exo_core.cli.main as m; m.build_parser(); "
        "heavy = [n for n in ('aiohttp', 'numpy', 'nacl', 'llama_cpp', 'onnxruntime', 'sqlite3') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"importing the CLI pulled in: {out.stdout.strip()}"
