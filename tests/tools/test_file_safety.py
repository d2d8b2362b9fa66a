"""Issue 19, item 2 at write time: the file tools touch only the file the gate judged.

The gate judges a call by its resolved path; between that and the write a
symbolic link can be swapped in (another process, a shell command of the same
turn). The tools take the resolved paths the gate judged
(``ToolContext.checked_paths``), resolve again when they run, refuse when the
answer changed, and walk the folders with ``O_NOFOLLOW`` so a link swapped in
during the walk is refused too.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from exo_core.tools import ApplyPatchTool, DeleteFileTool, EditFileTool, ReadFileTool, ToolContext, WriteFileTool


async def _quiet(text: str, stream: str) -> None:
    return None


def _ctx(ws: Path, *checked: Path) -> ToolContext:
    return ToolContext(
        workspace=ws, call_id="c", emit_output=_quiet, checked_paths=frozenset(str(p) for p in checked) or None
    )


def _world(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    (ws / "d" / "f.txt").write_text("inside\n")
    return ws, outside


async def test_a_folder_swapped_for_a_link_after_the_check_is_refused(tmp_path: Path) -> None:
    ws, outside = _world(tmp_path)
    checked = ws / "d" / "f.txt"
    (ws / "d" / "f.txt").unlink()
    (ws / "d").rmdir()
    (ws / "d").symlink_to(outside)  # after the gate looked at ws/d/f.txt
    for tool, args in (
        (WriteFileTool(), {"path": "d/f.txt", "content": "pwned\n"}),
        (EditFileTool(), {"path": "d/f.txt", "old": "outside", "new": "pwned"}),
        (ReadFileTool(), {"path": "d/f.txt"}),
        (DeleteFileTool(), {"path": "d/f.txt"}),
    ):
        result = await tool.run(args, _ctx(ws, checked))
        assert result.is_error and "changed since" in result.content, (tool, result)
    assert (outside / "f.txt").read_text() == "outside\n"


async def test_a_file_swapped_for_a_link_after_the_check_is_refused(tmp_path: Path) -> None:
    ws, outside = _world(tmp_path)
    checked = ws / "d" / "f.txt"
    (ws / "d" / "f.txt").unlink()
    (ws / "d" / "f.txt").symlink_to(outside / "f.txt")
    read = await ReadFileTool().run({"path": "d/f.txt"}, _ctx(ws, checked))
    assert read.is_error and "outside\n" not in read.content
    wrote = await WriteFileTool().run({"path": "d/f.txt", "content": "pwned\n"}, _ctx(ws, checked))
    assert wrote.is_error
    patch = "--- a/d/f.txt\n+++ b/d/f.txt\n@@ -1 +1 @@\n-outside\n+pwned\n"
    patched = await ApplyPatchTool().run({"patch": patch}, _ctx(ws, checked))
    assert patched.is_error
    assert (outside / "f.txt").read_text() == "outside\n"


async def test_what_was_judged_is_what_is_written(tmp_path: Path) -> None:
    ws, outside = _world(tmp_path)
    (ws / "link").symlink_to(outside)
    # The person approved writing through the link (the gate judged the resolved file): it is written.
    done = await WriteFileTool().run({"path": "link/f.txt", "content": "ok\n"}, _ctx(ws, outside / "f.txt"))
    assert not done.is_error, done
    assert (outside / "f.txt").read_text() == "ok\n"
    # A write the gate never judged is refused, whatever it resolves to.
    other = await WriteFileTool().run({"path": "d/g.txt", "content": "x"}, _ctx(ws, outside / "f.txt"))
    assert other.is_error and not (ws / "d" / "g.txt").exists()


async def test_without_a_gate_the_tools_still_work_and_keep_the_mode(tmp_path: Path) -> None:
    ws, _outside = _world(tmp_path)
    script = ws / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o750)
    ctx = _ctx(ws)
    assert not (await EditFileTool().run({"path": "run.sh", "old": "hi", "new": "there"}, ctx)).is_error
    assert script.read_text() == "echo there\n" and (script.stat().st_mode & 0o777) == 0o750
    assert not (await WriteFileTool().run({"path": "new/deep/n.txt", "content": "n"}, ctx)).is_error
    assert (ws / "new" / "deep" / "n.txt").read_text() == "n"
    assert (await ReadFileTool().run({"path": "new/deep/n.txt"}, ctx)).content == "n"


async def test_reading_a_fifo_or_device_fails_at_once(tmp_path: Path) -> None:
    ws, _outside = _world(tmp_path)
    os.mkfifo(ws / "pipe")
    for path in ("pipe", "/dev/zero"):
        result = await asyncio.wait_for(ReadFileTool().run({"path": path}, _ctx(ws)), 10)
        assert result.is_error and "not a regular file" in result.content, result


async def test_delete_file_removes_a_link_not_its_target(tmp_path: Path) -> None:
    ws, outside = _world(tmp_path)
    (ws / "link.txt").symlink_to(outside / "f.txt")
    done = await DeleteFileTool().run({"path": "link.txt"}, _ctx(ws, ws / "link.txt"))
    assert not done.is_error, done
    assert not (ws / "link.txt").is_symlink() and (outside / "f.txt").read_text() == "outside\n"
