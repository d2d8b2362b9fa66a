"""bench_context runs in its quick mode and reports every number (no timing is asserted, DESIGN.md §7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_context_quick(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_context.py",
            "--quick",
            "--json",
            "--messages",
            "80",
            "--out",
            str(tmp_path / "context.json"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == json.loads((tmp_path / "context.json").read_text())
    result = data["result"]
    assert result["messages"] == 80 and result["turns"] > 0
    tokens = result["tokens"]
    assert 0 < tokens["last_turn_ratio"] < 1 and 0 < tokens["all_turns_ratio"] < 1
    assert tokens["view_summary_tokens"] <= tokens["view_budget"]
    for key in ("tree_median", "full_median"):
        assert result["steady_build_ms"][key] > 0 and result["build_ms_per_turn"][key] > 0
    assert result["summaries"]["calls"] > 0
