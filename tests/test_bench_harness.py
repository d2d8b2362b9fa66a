"""One benchmark harness: every ``exo bench NAME`` takes ``--quick``, ``--json`` and ``--out FILE``.

The flags are checked by parsing only: ``exo bench NAME --help`` lists what the benchmark accepts, and
no benchmark runs. One cheap benchmark (the gate's) then runs quickly to show where a quick run writes:
only the file ``--out`` names; a small full run of the hub's writes to the person's Exo home, and
neither ever touches the committed ``benchmarks/results/`` (docs/benchmarks.md). Last, the
tables ``benchmarks/render_tables.py`` renders into docs/benchmarks.md match the committed results,
follow a results file when it changes, and a number edited by hand inside any of them is caught.
Each renderer on a small results file: ``tests/test_render_tables.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.render_tables import RENDERERS, render_doc
from exo_core.cli.main import build_parser

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "benchmarks.md"
SHARED_FLAGS = ("--quick", "--json", "--out FILE")
AT_ONCE = 4  # help runs in flight: the machine has two cores shared with others


def _env(home: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if home is not None:
        env["EXO_HOME"] = str(home)
    return env


def _exo(*args: str) -> list[str]:
    return [sys.executable, "-m", "exo_core.cli.main", *args]


def _registered_benchmarks() -> list[str]:
    """The names ``exo bench`` registers, read from the real parser (so a new one is checked too)."""
    bench = _subcommands(build_parser())["bench"]
    return sorted(_subcommands(bench))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of a parser, by name (argparse keeps them on its one subparsers action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError(f"{parser.prog} has no sub-commands")


def _results_snapshot() -> dict[str, bytes]:
    """Each committed results file's name and bytes."""
    return {path.name: path.read_bytes() for path in RESULTS.iterdir()}


def test_every_registered_benchmark_takes_the_shared_flags() -> None:
    names = _registered_benchmarks()
    assert {"footprint", "retrieval", "stress", "hub", "ledger", "models", "gate"} <= set(names)
    missing: dict[str, list[str]] = {}
    for start in range(0, len(names), AT_ONCE):
        batch = names[start : start + AT_ONCE]
        procs = {
            name: subprocess.Popen(
                _exo("bench", name, "--help"),
                cwd=REPO,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in batch
        }
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"exo bench {name} --help failed:\n{err[-2000:]}"
            lacking = [flag for flag in SHARED_FLAGS if flag.split()[0] not in out]
            if "--out" in out and "--out FILE" not in out:
                lacking.append("--out FILE (as the metavar)")
            if lacking:
                missing[name] = lacking
    assert missing == {}, f"benchmarks without the shared flags: {missing}"


def test_a_quick_run_writes_only_the_out_file(tmp_path: Path) -> None:
    before = _results_snapshot()
    home = tmp_path / "home"
    out = tmp_path / "gate.json"
    run = subprocess.run(
        _exo("bench", "gate", "--quick", "--json", "--out", str(out)),
        cwd=REPO,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    printed = json.loads(run.stdout)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["lines"] > 0 and printed["gate_us"] > 0 and printed["read_us"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gate.json"], "a temporary file was left beside it"

    bare = subprocess.run(
        _exo("bench", "gate", "--quick"), cwd=REPO, env=_env(home), capture_output=True, text=True, timeout=300
    )
    assert bare.returncode == 0, bare.stderr[-3000:]
    assert "gate cost per command line" in bare.stdout
    assert not home.exists(), "a quick run without --out wrote a file"
    assert _results_snapshot() == before, "a quick run wrote into benchmarks/results/"


def test_a_persons_full_run_writes_to_their_exo_home_never_the_committed_results(tmp_path: Path) -> None:
    before = _results_snapshot()
    home = tmp_path / "home"
    small = ("--seq-events", "20", "--events", "200", "--batch", "50", "--replay", "500")
    run = subprocess.run(
        _exo("bench", "hub", *small), cwd=REPO, env=_env(home), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    written = json.loads((home / "bench" / "hub.json").read_text(encoding="utf-8"))
    assert written["benchmark"] == "hub" and written["quick"] is False
    assert _results_snapshot() == before, "a person's full run rewrote benchmarks/results/"

    refused = subprocess.run(
        _exo("bench", "hub", "--quick", "--update-results", *small),
        cwd=REPO,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode != 0 and "--update-results takes a full run" in refused.stderr
    assert _results_snapshot() == before


def test_the_footprint_audit_writes_to_the_exo_home_unless_a_developer_updates_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from exo_edge.footprint.cli import _results_file, build_parser

    monkeypatch.setenv("EXO_HOME", str(tmp_path))
    parse = build_parser().parse_args
    assert _results_file(parse(["--board", "standard"])) == tmp_path / "bench" / "footprint_standard.json"
    assert _results_file(parse(["--board", "small", "--quick"])) is None
    assert _results_file(parse(["--out", str(tmp_path / "x.json")])) == tmp_path / "x.json"
    committed = _results_file(parse(["--board", "standard", "--update-results"]))
    assert committed == RESULTS / "footprint_standard.json"
    with pytest.raises(SystemExit, match="--update-results"):
        _results_file(parse(["--quick", "--update-results"]))


def _render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.render_tables", *args],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_committed_docs_tables_match_the_committed_results() -> None:
    done = _render("--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tables_follow_the_results_files(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    ledger = json.loads((RESULTS / "ledger.json").read_text(encoding="utf-8"))
    ledger["single_append"]["ledger_per_s"] = 4321.5
    (results / "ledger.json").write_text(json.dumps(ledger), encoding="utf-8")
    store = json.loads((RESULTS / "store.json").read_text(encoding="utf-8"))
    store["items_vs_raw_sqlite_full_sync"] = 7.25
    (results / "store.json").write_text(json.dumps(store), encoding="utf-8")
    doc = tmp_path / "benchmarks.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")

    stale = _render("--check", "--results", str(results), "--doc", str(doc))
    assert stale.returncode == 1 and "differ" in stale.stdout
    rewritten = _render("--results", str(results), "--doc", str(doc))
    assert rewritten.returncode == 0, rewritten.stderr
    text = doc.read_text(encoding="utf-8")
    assert "| 1,000 | 4,321.5 | raw INSERT of the same bytes |" in text
    assert "`synchronous=FULL` | 7.25 |" in text
    assert _render("--check", "--results", str(results), "--doc", str(doc)).returncode == 0


def _table_block(text: str, name: str) -> tuple[int, int]:
    """Where the rendered table ``name`` stands in the page: the span between its two markers."""
    start = text.index(f"<!-- results:{name} -->") + len(f"<!-- results:{name} -->")
    end = text.index(f"<!-- /results:{name} -->")
    return start, end


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_a_number_edited_by_hand_in_a_rendered_table_is_caught(name: str) -> None:
    """Each registered table is rebuilt from its file: a digit changed inside its markers does not survive."""
    committed = DOC.read_text(encoding="utf-8")
    start, end = _table_block(committed, name)
    block = committed[start:end]
    digits = [match.start() for match in re.finditer(r"[0-9]", block)]
    assert digits, f"the {name} table holds no number"
    at = start + digits[len(digits) // 2]
    changed_digit = "7" if committed[at] != "7" else "3"
    edited = committed[:at] + changed_digit + committed[at + 1 :]

    assert render_doc(edited, RESULTS) == committed


def test_the_check_fails_on_a_hand_edit_and_on_an_unknown_table(tmp_path: Path) -> None:
    committed = DOC.read_text(encoding="utf-8")
    doc = tmp_path / "benchmarks.md"
    doc.write_text(committed.replace("| 1,000 | 132.1 |", "| 1,000 | 133.1 |"), encoding="utf-8")
    edited = _render("--check", "--doc", str(doc))
    assert edited.returncode == 1 and "differ" in edited.stdout
    assert "tables that differ" in edited.stdout and ": ledger;" in edited.stdout

    unknown = committed + "\n<!-- results:no.such.table -->\n| a |\n<!-- /results:no.such.table -->\n"
    with pytest.raises(ValueError, match="no.such.table"):
        render_doc(unknown, RESULTS)
    start_marker = "<!-- results:hub.replay -->"
    with pytest.raises(ValueError, match="hub.replay"):
        render_doc(committed.replace(start_marker, ""), RESULTS)
