"""The labelled decision set and the benchmark's shape (rules-only, quick; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from exo_core.decisions.uses import USES
from exo_testkit import ROOT

DATA = ROOT / "benchmarks" / "data" / "decisions.jsonl"


def test_the_labelled_set_has_300_cases_across_the_three_uses_in_time_order() -> None:
    cases = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(cases) >= 300
    assert {c["use"] for c in cases} == set(USES)
    assert all(c["label"] in USES[c["use"]].options for c in cases)
    assert len({c["id"] for c in cases}) == len(cases) and len({c["text"] for c in cases}) == len(cases)
    stamps = [c["ts"] for c in cases]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    for use, question in USES.items():
        labels = {c["label"] for c in cases if c["use"] == use}
        assert labels == set(question.options), use  # every option occurs
        examples = {text for text, _ in question.examples}
        assert not examples & {c["text"] for c in cases}  # the prompts' examples are not test cases


def test_the_benchmark_runs_quick_without_the_model(tmp_path: Path) -> None:
    out = tmp_path / "decisions.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_decisions", "--quick", "--no-model", "--json", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["benchmark"] == "decisions" and result["quick"] is True
    assert result["cases"]["fit_until"] < result["cases"]["test_from"]  # split by time
    scores = result["scores"]["rules-only"]
    assert 0.0 <= scores["all"]["accuracy"] <= 1.0 and 0.0 <= scores["all"]["ece"] <= 1.0
    assert set(scores) >= {"all", "signal", "toolset", "panel"}
