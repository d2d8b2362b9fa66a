"""The CLI answers a person in words when there is nothing to show, and labels what it shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT


def _exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_HOME", "EXO_TOKEN")}
    env.update(PYTHONPATH=str(ROOT), EXO_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "exo_core.cli", *args], capture_output=True, text=True, env=env)


def test_search_says_so_when_nothing_matches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _exo(home, "init").returncode == 0
    fresh = _exo(home, "search", "dentist")
    assert fresh.returncode == 0 and "nothing to search until you chat" in fresh.stdout
    assert json.loads(_exo(home, "search", "--json", "dentist").stdout) == []
    missing = _exo(tmp_path / "nowhere", "search", "dentist")
    assert missing.returncode == 2 and "run `exo init` first" in missing.stderr


def test_learn_metrics_labels_windows_with_dates(tmp_path: Path) -> None:
    from exo_core.cli.learn_cmd import _window_label

    assert _window_label(1_764_547_200_000, 7) == "2025-12-01 .. 2025-12-07"
    assert _window_label(1_764_547_200_000, 1) == "2025-12-01"
    home = tmp_path / "home"
    assert _exo(home, "init").returncode == 0
    out = _exo(home, "learn", "metrics")
    assert out.returncode == 0 and "no verdicts or questions in the ledger yet" in out.stdout


def test_bench_retrieval_without_data_names_what_it_takes(tmp_path: Path) -> None:
    out = _exo(tmp_path / "home", "bench", "retrieval")
    assert out.returncode == 2
    assert "--locomo FILE" in out.stderr and "LongMemEval" in out.stderr
