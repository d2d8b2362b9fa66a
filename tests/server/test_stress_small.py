"""The stress target of issue 19 (benchmarks/bench_stress.py) at a small count: the same code, in the suite.

The full counts (1,000 SIGKILL cycles, 100,000 fuzzed commands over TCP and
stdio, 2,000 idle connections) run outside the suite's time budget:
``python -m benchmarks.bench_stress``. Here each part runs a few times and its
zero-loss, zero-5xx, owner-always-answered results must hold. No time is
asserted (a benchmark reports ratios).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_stress_target_at_a_small_count(tmp_path: Path) -> None:
    out = tmp_path / "stress.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "exo_core.cli.main",
        "bench",
        "stress",
        "--kill-cycles",
        "2",
        "--fuzz",
        "150",
        "--idle",
        "60",
    ]
    cmd += ["--stall", "1", "--base", str(tmp_path / "work"), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    kill = data["kill"]
    assert kill["acknowledged_events"] > 0 and kill["ledger_entries_seen"] > 0
    assert (kill["events_lost"], kill["events_changed"], kill["seq_holes"]) == (0, 0, 0)
    assert (kill["ledger_lost"], kill["ledger_changed"]) == (0, 0)
    for transport in ("tcp", "stdio"):
        fuzz = data["fuzz"][transport]
        assert fuzz["sent"] > 100 and fuzz["crashes"] == 0 and fuzz["untyped"] == 0, fuzz
    assert data["fuzz"]["tcp"]["status_5xx"] == 0 and data["fuzz"]["stdio"]["exit_code"] == 0
    idle = data["idle"]
    assert idle["health_probes"] > 0 and idle["health_max_s"] != float("inf"), "the owner's socket always answered"
    assert data["stall"]["big_post_statuses"] == [413]
