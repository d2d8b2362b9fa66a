"""The shipped signal pool names the source of every entry, and a source can be left out of it (issue 21's
sixth pass: the leave-one-source-out study, benchmarks/bench_decisions_sources.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT

from exo_core.decisions import SIGNAL
from exo_core.decisions.neighbours import DEFAULT_SIGNAL_POOL, ExamplePool, NeighbourExamples

from .conftest import WordEmbedder

DATA = ROOT / "benchmarks" / "data"
SOURCES = ("labelled", "fit172", "more")


def _ids(path: Path) -> set[str]:
    return {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def _labelled_fit_ids() -> set[str]:
    """The labelled set's signal cases in its fit part (the oldest 60 %, as bench_decisions.py splits it)."""
    lines = (DATA / "decisions.jsonl").read_text(encoding="utf-8").splitlines()
    cases = sorted((json.loads(line) for line in lines if line.strip()), key=lambda c: c["ts"])
    fit_part = cases[: int(len(cases) * 0.6)]
    return {c["id"] for c in fit_part if c["use"] == "signal"}


def test_every_entry_of_the_shipped_pool_names_its_source() -> None:
    examples = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()
    assert all(e.source in SOURCES for e in examples)
    by_source = {source: {e.id for e in examples if e.source == source} for source in SOURCES}
    assert by_source["fit172"] == _ids(DATA / "decisions_signal_fit.jsonl")
    assert by_source["more"] == _ids(DATA / "decisions_signal_more.jsonl")
    assert by_source["labelled"] == _labelled_fit_ids()  # the fit part only: no test-part case is in the pool
    for source in SOURCES:
        labels = {e.label for e in examples if e.source == source}
        assert labels == set(SIGNAL.options), source


def test_each_source_can_be_left_out_of_the_shipped_pool() -> None:
    everything = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()
    for source in SOURCES:
        kept = ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL, leave_out=frozenset({source})).examples()
        assert [e.id for e in kept] == [e.id for e in everything if e.source != source]
        near = NeighbourExamples(
            ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL, leave_out=frozenset({source})), embedder=WordEmbedder()
        )
        for case in [e for e in everything if e.source == source][:20]:
            chosen = near.choose(case.text)
            assert len(chosen) == 2 * len(SIGNAL.options)
            assert all(e.source != source for e in chosen)  # never the message's own writer's entries


def test_the_source_study_tables_print_from_its_results_file() -> None:
    results = ROOT / "benchmarks" / "results" / "decisions_sources.json"
    saved = json.loads(results.read_text())
    assert set(saved["sources"]) == set(SOURCES)
    assert all(case["source"] in SOURCES for case in saved["cases"].values())
    assert not set(saved["cases"]) - {e.id for e in ExamplePool(DEFAULT_SIGNAL_POOL, SIGNAL).examples()}  # fit only
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_decisions_sources", "--markdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "| larger:nn | pooled |" in done.stdout and "| larger:fixed | pooled |" in done.stdout


def test_the_http_benchmark_prints_its_saved_tables() -> None:
    for name in ("decisions_http.json",):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_decisions_http",
                "--markdown",
                "--out",
                f"benchmarks/results/{name}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "| http:fixed |" in done.stdout


def test_the_study_calibrates_each_source_on_the_other_sources_only() -> None:
    from benchmarks import bench_decisions_sources as study

    # The same raw numbers everywhere; "labelled" is always a rule, the other two sources always a correction.
    cases = [
        {
            "id": f"{source}{i}",
            "label": "rule" if source == "labelled" else "correction",
            "source": source,
            "rule": None,
        }
        for source in SOURCES
        for i in range(20)
    ]
    raws = {case["id"]: {"correction": 0.4, "rule": 0.35, "neither": 0.25} for case in cases}
    del raws["more0"]  # a failed call: an even split, an abstention
    found = study.cross_fitted(raws, cases)
    assert found is not None
    labelled = found["labelled0"]
    assert max(labelled, key=lambda o: labelled[o]) == "correction"  # learnt from the other sources, not its own
    assert found["more0"] == study.UNANSWERED
    summary = study.summarise(cases, {"larger:fixed": raws, "larger:nn": raws})
    pooled = summary["leftovers"]["larger:fixed"]["pooled"]
    assert pooled["n"] == 60 and pooled["failed"] == 1 and pooled["right"] <= 40
    assert summary["systems"]["rules + larger:fixed"]["pooled"]["n"] == 60
    choice = study.choose(summary, {"larger:nn": {"p95_s": 5.0}})
    assert choice["neighbours"] == [] and choice["nn_more_right"] == 0  # a tie goes to the fixed examples


def test_the_http_benchmark_scores_exods_default_prompt_with_the_studys_fit_raws() -> None:
    from benchmarks import bench_decisions_http as http
    from exo_core.decisions.setup import DecisionSettings

    assert http.default_prompt() == ("nn" if "larger" in DecisionSettings().neighbours else "fixed")
    study = ROOT / "benchmarks" / "results" / "decisions_sources.json"
    for prompt in ("fixed", "nn"):
        found = http.fit_raws(study, f"larger:{prompt}")
        assert len(found) >= 200 and all(abs(sum(p.values()) - 1) < 1e-3 for p in found.values())
    # The prompt study (issue 21's ninth pass) asked every fit message, the four scored held-out sets included.
    found = http.fit_raws(ROOT / "benchmarks" / "results" / "decisions_prompt.json", "larger:eighth")
    assert {"new-001", "n2-001", "n3a-001", "n4a-001", "n4b-001"} <= set(found) and len(found) == 875
