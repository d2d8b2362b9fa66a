"""``exo bench sandbox --quick`` runs and reports what it should (no timing is asserted: docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_quick_run_reports_both_times_and_no_form_read_in_the_sandbox(tmp_path: Path) -> None:
    out = tmp_path / "sandbox.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(REPO / "tests")))}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_sandbox", "--quick", "--json", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["bare_ms"] > 0 and data["sandbox_ms"] > 0 and data["ratio"] > 0
    totals = data["walls"]["totals"]
    assert totals["forms"] > 30 and totals["unconfined"] > 0
    assert totals.get("sandbox_beside", 0) == 0 and totals.get("sandbox_inside", 0) == 0
    assert data["walls"]["secrets_in_workspace_files"] == {"beside": 0, "inside": 0}
