"""Small board first: the core's size budget and what the CLI imports at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT

LINE_BUDGET = 15_000


def code_lines(folder: Path) -> int:
    """Lines that are neither blank nor comments, over every .py file."""
    total = 0
    for path in folder.rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                total += 1
    return total


def test_exo_core_stays_under_its_line_budget() -> None:
    count = code_lines(ROOT / "exo_core")
    assert count < LINE_BUDGET, f"exo_core has {count} lines of code; the budget is {LINE_BUDGET}"


def test_the_cli_imports_nothing_heavy_at_start() -> None:
    code = (
        "import sys, exo_core.cli.main as m; m.build_parser(); "
        "heavy = [n for n in ('aiohttp', 'numpy', 'nacl', 'llama_cpp', 'onnxruntime', 'sqlite3') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"importing the CLI pulled in: {out.stdout.strip()}"
