"""``exo gate check``: the axes and outcome as JSON, and clear errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT


def gate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # No EXO_HOME from the caller's environment unless a test gives one: a real home must not decide.
    base = {k: v for k, v in os.environ.items() if k != "EXO_HOME"}
    env = {**base, "HOME": str(cwd), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "gate", "check", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_gate_check_prints_axes_and_outcome(tmp_path: Path) -> None:
    out = gate("--", "git", "commit", "-am", "x", "&&", "git", "push", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["outcome"] == "ask" and data["axes"]["exposure"] == "public"
    assert data["summary"] == "push branch to origin" and [p["key"] for p in data["parts"]] == [
        "git.change",
        "git.push",
    ]
    tool = json.loads(gate("--tool", "edit_file", "--args", '{"path": "README.md"}', cwd=tmp_path).stdout)
    assert tool["outcome"] == "log" and tool["axes"]["reversibility"] == "reversible"
    floor = json.loads(gate("--", "gh pr comment 3 -b hi", cwd=tmp_path).stdout)
    assert floor["outcome"] == "ask" and "third party" in floor["floor"]


def test_gate_check_uses_a_policy_file_and_reports_bad_input(tmp_path: Path) -> None:
    policy = tmp_path / "gate.toml"
    policy.write_text('[overrides]\n"git.push" = "allow"\n')
    allowed = json.loads(gate("--policy", str(policy), "--", "git push", cwd=tmp_path).stdout)
    assert allowed["outcome"] == "allow"
    for args, fragment in (
        (["--tool", "x", "--args", "[1"], "not valid JSON"),
        (["--tool", "x", "--args", "[1]"], "JSON object"),
        ([], "nothing to check"),
        (["--policy", str(tmp_path / "none.toml"), "--", "ls"], "no policy file"),
        (["--tool", "x", "--", "ls"], "not both"),
    ):
        bad = gate(*args, cwd=tmp_path)
        assert bad.returncode == 2 and fragment in bad.stderr, (args, bad.stderr)
    policy.write_text("[matrix\n")
    broken = gate("--policy", str(policy), "--", "ls", cwd=tmp_path)
    assert broken.returncode == 2 and "bad_config" in broken.stderr


def test_gate_check_honours_the_homes_gate_toml_as_exod_does(tmp_path: Path) -> None:
    """Issue 23 (CLI): without --policy, `exo gate check` decides under $EXO_HOME/gate.toml, the file exod loads."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "gate.toml").write_text('denied = ["git.push"]\n')
    env_home = {"EXO_HOME": str(home)}
    denied = gate("--", "git push", cwd=tmp_path, env=env_home)
    assert denied.returncode == 0, denied.stderr
    data = json.loads(denied.stdout)
    assert data["outcome"] == "deny" and data["policy"] == str(home / "gate.toml")
    # --home names another home; a home without gate.toml is the built-in policy.
    other = tmp_path / "other"
    other.mkdir()
    built_in = json.loads(gate("--home", str(other), "--", "git push", cwd=tmp_path, env=env_home).stdout)
    assert built_in["outcome"] == "ask" and built_in["policy"].startswith("built in")
    # --policy still wins over the home's file.
    policy = tmp_path / "loose.toml"
    policy.write_text('[overrides]\n"git.push" = "allow"\n')
    loose = json.loads(gate("--policy", str(policy), "--", "git push", cwd=tmp_path, env=env_home).stdout)
    assert loose["outcome"] == "allow"
