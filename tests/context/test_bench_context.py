"""bench_context runs in its quick mode and reports every number (no timing is asserted: docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_bench_context_quick(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_context",
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


@pytest.mark.model
def test_bench_context_window_quick(tmp_path: Path) -> None:
    """The window mode with the real Qwen 0.5B tokenizer: every call fits, and the numbers are reported."""
    model = Path(os.environ.get("EXO_MODELS_DIR", Path.home() / ".cache" / "exo" / "models"))
    model = model / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    try:
        import llama_cpp  # noqa: F401 - only checks that the runtime is installed
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (run scripts/install_edge.sh)")
    if not model.is_file():
        pytest.skip(f"{model.name} is not fetched on this machine (run `exo models fetch`)")
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_WAIT_POLICY="PASSIVE")
    args = ["--window", str(model), "--n-ctx", "2048", "--turns", "12", "--quick", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_context", *args, "--out", str(tmp_path / "window.json")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    assert result["turns"] == 12 and result["calls"] >= 12 and result["errors"] == []
    assert result["overflows"] == 0 and result["tokens_per_call"]["max"] <= 2048 - result["answer_room"]
    assert result["unfitted_overflows"] > 0  # the baseline: without fitting, the same session overflows
