"""The file tools refuse exod's own files by what they are (resolved place, device and inode), never by spelling.

The tools are called directly, with no gate in front: a hard link or a symbolic link in the workspace,
another spelling of the home, a workspace inside the home: each is judged by where it really leads.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from exo_core.sandbox import ExodFiles, Sandbox
from exo_core.tools import ApplyPatchTool, DeleteFileTool, EditFileTool, ReadFileTool, Tool, ToolContext, WriteFileTool

TOKEN = "tok-" + "s" * 40


async def _no_output(text: str, stream: str) -> None:
    return None


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "exohome"
    for folder in ("keys", "trust", "store/indexes", "workspace"):
        (home / folder).mkdir(parents=True)
    (home / "token").write_text(TOKEN + "\n")
    (home / "gate.toml").write_text("# policy\n")
    (home / "config.toml").write_text('store = "store"\n')
    (home / "trust" / "owner").write_text("pinned\n")
    (home / "store" / "pack.md").write_text("# pack\n")
    (home / "store" / "ledger.sqlite").write_text("ledger\n")
    return home


def _context(ws: Path, home: Path | None) -> ToolContext:
    sandbox = None
    if home is not None:
        sandbox = Sandbox(ExodFiles.of(home, stores=(home / "store",), workspaces=(ws,)))
    return ToolContext(workspace=ws, call_id="c", emit_output=_no_output, sandbox=sandbox)


def _call(tool: Tool, arguments: dict[str, str], context: ToolContext) -> str:
    return asyncio.run(tool.run(arguments, context)).content


def test_a_hard_link_to_the_token_in_the_workspace_is_refused(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(home / "token", ws / "notes.txt")
    context = _context(ws, home)
    read = _call(ReadFileTool(), {"path": "notes.txt"}, context)
    assert TOKEN not in read and "hard link" in read, read
    edited = _call(EditFileTool(), {"path": "notes.txt", "old": "tok", "new": "x"}, context)
    patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-" + TOKEN + "\n+x\n"
    patched = _call(ApplyPatchTool(), {"patch": patch}, context)
    assert "error" in edited and "error" in patched, (edited, patched)
    assert (home / "token").read_text() == TOKEN + "\n"


def test_the_gate_denies_a_hard_link_to_the_token(tmp_path: Path, home: Path) -> None:
    """The gate judges the same way, so no approval card is shown for what the tool would refuse."""
    from exo_core.gate import ConsequenceGate, Policy

    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(home / "token", ws / "notes.txt")
    (ws / "plain.txt").write_text("hello\n")
    gate = ConsequenceGate(Policy(), workspace=ws, exo_home=home, stores=(home / "store",))
    assert gate.check(ReadFileTool.spec, {"path": "notes.txt"}).action == "deny"
    assert gate.check(ReadFileTool.spec, {"path": "plain.txt"}).action == "allow"


def test_the_default_home_is_guarded_without_a_sandbox_given(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool that was given no sandbox still judges by ``$EXO_HOME``'s files: never by nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(home / "token", ws / "copy.txt")
    monkeypatch.setenv("EXO_HOME", str(home))
    read = _call(ReadFileTool(), {"path": "copy.txt"}, _context(ws, None))
    assert TOKEN not in read and "error" in read


@pytest.mark.parametrize("name", ["token", "gate.toml", "config.toml", "trust/owner", "store/ledger.sqlite"])
def test_links_and_other_spellings_of_exods_files_are_refused(tmp_path: Path, home: Path, name: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(home)
    (tmp_path / "alias").symlink_to(home)
    context = _context(ws, home)
    before = (home / name).read_bytes()
    for path in (f"link/{name}", str(tmp_path / "alias" / name), f"../exohome/./{name}", str(home / name)):
        read = _call(ReadFileTool(), {"path": path}, context)
        assert read.startswith("error:") and ("exod's own" in read or "private file" in read), (path, read)
        wrote = _call(WriteFileTool(), {"path": path, "content": "denied = []\n"}, context)
        assert wrote.startswith("error:"), (path, wrote)
    deleted = _call(DeleteFileTool(), {"path": str(home / name)}, context)
    assert deleted.startswith("error:")
    assert (home / name).read_bytes() == before


def test_a_workspace_inside_the_home_stays_the_persons(home: Path) -> None:
    ws = home / "workspace"
    context = _context(ws, home)
    assert _call(WriteFileTool(), {"path": "notes.md", "content": "hello\n"}, context).startswith("wrote")
    assert _call(ReadFileTool(), {"path": "notes.md"}, context) == "hello\n"
    assert _call(ReadFileTool(), {"path": "../config.toml"}, context).startswith("error:")
    assert _call(ReadFileTool(), {"path": "../store/pack.md"}, context) == "# pack\n"  # curated: the person's
    assert _call(ReadFileTool(), {"path": "../store/ledger.sqlite"}, context).startswith("error:")
