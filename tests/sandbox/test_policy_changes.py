"""The gate's policy is the person's to change, through ``exo gate set``; every policy exod runs under is in the ledger."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from exo_testkit import ROOT, Exod, write_script

from exo_core.ledger import Ledger

NEW_POLICY = '# the person\'s choice\ndenied = ["git.push"]\n'
DIGEST = hashlib.sha256(NEW_POLICY.encode()).hexdigest()


def _exo(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EXO_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], env=env, capture_output=True, text=True, input=stdin
    )


def _policy_entries(home: Path) -> list[dict[str, object]]:
    with Ledger.open_store(home / "store") as ledger:
        return [dict(e.body) for e in ledger.entries(kind="policy")]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert _exo("init", "--home", str(home)).returncode == 0
    return home


def test_exo_gate_set_writes_the_policy_and_records_it(home: Path, tmp_path: Path) -> None:
    new = tmp_path / "policy.toml"
    new.write_text(NEW_POLICY)
    done = _exo("gate", "set", str(new), "--yes", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert "+denied" in done.stdout and "recorded as ledger entry" in done.stdout
    assert (home / "gate.toml").read_text() == NEW_POLICY
    assert stat.S_IMODE((home / "gate.toml").stat().st_mode) == 0o600
    [entry] = _policy_entries(home)
    assert entry["by"] == "exo gate set" and entry["sha256"] == DIGEST and entry["previous"] == "default"
    assert "text" not in entry, "the policy stays in this machine's home; the ledger travels with the store"
    judged = _exo("gate", "check", "--home", str(home), "--", "git", "push", "origin", "main")
    assert '"outcome": "deny"' in judged.stdout


def test_a_bad_policy_or_no_yes_changes_nothing(home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('overrides = { "git.push" = "maybe" }\n')
    refused = _exo("gate", "set", str(bad), "--yes", "--home", str(home))
    assert refused.returncode != 0 and "maybe" in refused.stderr
    good = tmp_path / "good.toml"
    good.write_text(NEW_POLICY)
    unconfirmed = _exo("gate", "set", str(good), "--home", str(home), stdin="y\n")  # piped: not a terminal
    assert unconfirmed.returncode != 0 and "--yes" in unconfirmed.stderr
    assert not (home / "gate.toml").exists() and _policy_entries(home) == []


def test_exod_records_a_policy_changed_by_hand_when_it_starts(home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = write_script(tmp_path / "script.json", [{"text": "ok"}])
    (home / "gate.toml").write_text(NEW_POLICY)
    for _ in range(2):  # the second start finds the same file: nothing new to record
        exod = Exod(home, script, ws).start()
        assert exod.stop() == 0
    [entry] = _policy_entries(home)
    assert entry["by"] == "found changed when exod started" and entry["sha256"] == DIGEST
    (home / "gate.toml").unlink()
    Exod(home, script, ws).start().stop()
    assert [e["sha256"] for e in _policy_entries(home)][-1] == "default"
