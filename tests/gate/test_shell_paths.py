"""Shell paths are judged by realpath, /tmp is outside, and a line's ``cd`` is followed (issue 19 item 2).

Real folders and symlinks on disk: a workspace and a folder outside it under the test's own temporary
folder, so the checks do not depend on the machine's home or /tmp layout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exo_core.gate import Policy, evaluate


def outcome(command: str, workspace: Path) -> tuple[str, str]:
    decision = evaluate("bash", {"command": command}, Policy().with_workspace(workspace))
    return decision.outcome, decision.classification.axes.reversibility


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / ".bashrc").write_text("# the person's\n")
    os.symlink(outside, workspace / "link")  # made earlier, e.g. by `ln -s ~ link` in another call
    return workspace, outside


def test_a_symlink_out_of_the_workspace_is_outside(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    # normpath says link/.bashrc is in the workspace; realpath says it is the person's file.
    for command in ("echo x >> link/.bashrc", "sed -i s/a/b/ link/.bashrc", "cp /dev/null link/.bashrc"):
        assert outcome(command, workspace) == ("ask", "irreversible"), command
    assert outcome("rm link/.bashrc", workspace) == ("ask", "irreversible")
    assert outcome("echo x >> notes.txt", workspace) == ("log", "reversible")
    assert outcome(f"echo x >> {outside}/notes.txt", workspace) == ("ask", "irreversible")


def test_making_a_link_out_of_the_workspace_asks(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    assert outcome(f"ln -s {outside} home", workspace)[0] == "ask"
    assert outcome("ln -s ../outside up", workspace)[0] == "ask"
    assert outcome("ln -s notes.txt alias.txt", workspace) == ("log", "reversible")


def test_a_workspace_under_tmp_is_still_the_workspace_but_tmp_itself_is_not(places: tuple[Path, Path]) -> None:
    workspace, _outside = places
    assert outcome("echo x > build.log", workspace) == ("log", "reversible")
    assert outcome("echo x > /tmp/exo-scratch-file", workspace) == ("ask", "irreversible")
    assert outcome("rm -rf /var/tmp/cache", workspace) == ("ask", "irreversible")


def test_cd_is_followed_within_a_line(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    assert outcome(f"cd {outside} && echo x >> .bashrc", workspace) == ("ask", "irreversible")
    assert outcome("cd link && touch x", workspace) == ("ask", "irreversible")
    assert outcome("mkdir -p sub && cd sub && touch x", workspace) == ("log", "reversible")
    assert outcome("cd $SOMEWHERE && touch x", workspace) == ("ask", "irreversible")


def test_exods_own_files_are_denied_but_a_workspace_inside_the_home_is_not(tmp_path: Path) -> None:
    """The device keeps its workspace in the Exo home (<home>/workspace): writing there is ordinary work."""
    home = tmp_path / "home" / ".exo"
    policy = Policy().with_workspace(home / "workspace").with_exo(home, (home / "store",))

    def judged(command: str) -> str:
        return evaluate("bash", {"command": command}, policy).outcome

    assert judged("echo x > notes.txt") == "log"
    assert judged("echo 'denied = []' > ../gate.toml") == "deny"
    assert judged("cat ../keys/ledger-ed25519.key") == "deny"
    assert judged("cp ../token t.txt") == "deny"
    assert judged("sqlite3 ../store/ledger.sqlite .dump") == "deny"
    assert judged(f"cd {home} && cat token") == "deny"
