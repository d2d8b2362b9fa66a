"""Issue 19, items 1 and 2: every file-tool call of the table gets the outcome it must get, on a real folder world.

The gate is built as exod builds it (the person's policy, the workspace, the
Exo home and the store), and judges each call against real files and
symbolic links. Then the tools themselves: a symbolic link swapped in after
the gate looked is refused at write time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from file_gate_cases import FILE_CASES, build_world, fill

from exo_core.gate import ConsequenceGate, Policy
from exo_core.tools import builtin_tools

SPECS = {spec.name: spec for spec in builtin_tools().specs()}


@pytest.fixture
def gate_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ConsequenceGate]:
    world = build_world(tmp_path)
    monkeypatch.setenv("HOME", str(world.user))  # "~" is the person's home of this world
    gate = ConsequenceGate(Policy(), workspace=world.ws, exo_home=world.home, stores=(world.store,))
    return world, gate


def test_the_table_is_large_enough() -> None:
    assert len(FILE_CASES) >= 40
    assert {tool for tool, *_ in FILE_CASES} == {"read_file", "write_file", "edit_file", "delete_file", "apply_patch"}


def test_every_file_call_gets_its_outcome(gate_world: tuple[Any, ConsequenceGate]) -> None:
    world, gate = gate_world
    wrong = []
    for tool, arguments, want, why in FILE_CASES:
        outcome = gate.check(SPECS[tool], fill(world, arguments))
        if outcome.action != want:
            wrong.append(f"{tool} {arguments} ({why}): {outcome.action}, want {want} [{outcome.reason}]")
    assert not wrong, "\n".join(wrong)


def test_a_person_cannot_lower_a_protected_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = build_world(tmp_path)
    monkeypatch.setenv("HOME", str(world.user))
    lax = Policy.from_mapping({"overrides": {"file.*": "allow"}, "reserved": []})
    gate = ConsequenceGate(lax, workspace=world.ws, exo_home=world.home, stores=(world.store,))
    key = {"path": str(world.home / "keys" / "ledger-ed25519.key")}
    outcome = gate.check(SPECS["read_file"], key)
    assert outcome.action == "deny", outcome
    gate.allow_always(outcome.rule_key)
    assert gate.check(SPECS["read_file"], key).action == "deny"
    # The same lax policy does lower an ordinary outside read: only the Exo home's secrets are fixed.
    assert gate.check(SPECS["read_file"], {"path": str(world.user / "notes.txt")}).action == "allow"


def test_the_outcome_names_the_resolved_files(gate_world: tuple[Any, ConsequenceGate]) -> None:
    world, gate = gate_world
    outcome = gate.check(SPECS["write_file"], {"path": "homelink/.bashrc", "content": "x"})
    assert outcome.targets == (str(world.user / ".bashrc"),)
    assert outcome.summary.startswith("write a sensitive file homelink/.bashrc -> "), outcome.summary
    outcome = gate.check(SPECS["edit_file"], {"path": "homelink/notes.txt", "old": "a", "new": "b"})
    assert outcome.summary.startswith("edit outside the workspace: homelink/notes.txt -> "), outcome.summary
    assert outcome.targets == (str(world.user / "notes.txt"),)


def test_a_workspace_inside_the_exo_home_stays_a_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The device image runs exod with ``--workspace <home>/workspace``: that folder is the agent's, the rest is not."""
    world = build_world(tmp_path)
    monkeypatch.setenv("HOME", str(world.user))
    ws = world.home / "workspace"
    ws.mkdir()
    gate = ConsequenceGate(Policy(), workspace=ws, exo_home=world.home, stores=(world.store,))
    cases = [
        ("write_file", {"path": "notes.md", "content": "x"}, "log"),
        ("write_file", {"path": "token", "content": "x"}, "log"),  # a file named token in the workspace is just a file
        ("read_file", {"path": "notes.md"}, "allow"),
        ("read_file", {"path": "../token"}, "deny"),
        ("read_file", {"path": "../keys/ledger-ed25519.key"}, "deny"),
        ("write_file", {"path": "../gate.toml", "content": "x"}, "deny"),
        ("write_file", {"path": "../plugins/p.py", "content": "x"}, "deny"),
        ("edit_file", {"path": "../config.toml", "old": "a", "new": "b"}, "deny"),
        ("read_file", {"path": "../config.toml"}, "deny"),
    ]
    wrong = [(t, a, want, gate.check(SPECS[t], a).action) for t, a, want in cases]
    assert [w for w in wrong if w[2] != w[3]] == []


def test_a_home_reached_through_a_link_is_judged_by_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--home`` and ``--workspace`` may name a link to the real home (a mounted card): both forms count."""
    world = build_world(tmp_path)
    monkeypatch.setenv("HOME", str(world.user))
    (world.home / "workspace").mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(world.home)
    gate = ConsequenceGate(Policy(), workspace=alias / "workspace", exo_home=alias, stores=(alias / "store",))
    assert gate.check(SPECS["write_file"], {"path": "n.md", "content": "x"}).action == "log"
    assert gate.check(SPECS["read_file"], {"path": str(world.home / "token")}).action == "deny"
    assert gate.check(SPECS["read_file"], {"path": str(alias / "keys" / "ledger-ed25519.key")}).action == "deny"
    assert gate.check(SPECS["write_file"], {"path": str(world.home / "gate.toml"), "content": "x"}).action == "deny"
    assert gate.check(SPECS["read_file"], {"path": str(world.store / "ledger.sqlite")}).action == "deny"
