"""Tools: the registry's contract, the fuzzy matcher, apply_patch, and search/recall/ui through the loop."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from exo_core.agent.scripted import ScriptedModel
from exo_core.engine.core import Core, CoreOptions
from exo_core.seams.home import ExoHome
from exo_core.tools import (
    MAX_RESULT_CHARS,
    ApplyPatchTool,
    EditFileTool,
    FunctionTool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    WriteFileTool,
    builtin_tools,
)
from exo_core.tools.match import find_match
from exo_core.tools.patch import parse_patch


async def _no_output(text: str, stream: str) -> None:
    return None


def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, call_id="c1", emit_output=_no_output)


def spec(name: str, toolset: str = "core") -> ToolSpec:
    return ToolSpec(name, name, {"type": "object", "properties": {}}, "low", toolset)


async def test_registry_never_raises_cuts_and_runs_blocking_handlers_in_a_thread(tmp_path: Path) -> None:
    threads: list[str] = []

    def blocking() -> str:
        threads.append(threading.current_thread().name)
        return "x" * (MAX_RESULT_CHARS + 50)

    def crash() -> str:
        raise KeyError("boom")

    reg = ToolRegistry(
        [
            FunctionTool(spec("big"), blocking),
            FunctionTool(spec("crash"), crash),
            FunctionTool(spec("json"), lambda: {"a": 1}),
            FunctionTool(spec("gone"), lambda: "never", available=lambda: False),
        ]
    )
    big = await reg.run("big", {}, ctx(tmp_path))
    assert big.truncated and len(big.content) < MAX_RESULT_CHARS + 100 and "cut" in big.content
    assert threads and threads[0] != threading.current_thread().name
    crashed = await reg.run("crash", {}, ctx(tmp_path))
    assert crashed.is_error and "KeyError" in crashed.content
    assert json.loads((await reg.run("json", {}, ctx(tmp_path))).content) == {"a": 1}
    assert (await reg.run("nope", {}, ctx(tmp_path))).is_error
    assert (await reg.run("big", [], ctx(tmp_path))).is_error  # type: ignore[arg-type]
    assert "gone" not in [s.name for s in reg.specs()]
    assert "not available" in (await reg.run("gone", {}, ctx(tmp_path))).content


async def test_toolsets_narrow_what_a_view_sees(tmp_path: Path) -> None:
    reg = builtin_tools()
    names = {s.name for s in reg.specs()}
    assert {"read_file", "write_file", "edit_file", "apply_patch", "bash", "search", "recall", "ui"} <= names
    files_only = reg.view(["core"])
    assert {s.name for s in files_only.specs()} == {
        "read_file",
        "write_file",
        "append_file",
        "edit_file",
        "delete_file",
        "apply_patch",
    }
    assert files_only.get("bash") is None
    assert (await files_only.run("bash", {"command": "ls"}, ctx(tmp_path))).is_error


@pytest.mark.parametrize(
    ("text", "old", "how"),
    [
        ("a\n    value = 1\nb\n", "    value = 1", "exact"),
        ("a\n    value = 1   \nb\n", "    value = 1\n", "trailing whitespace"),
        ("a\n\tvalue  =  1\nb\n", "value = 1", "whitespace"),
        ("def f():\n    return compute(alpha, beta)\n", "return compute(alpha,beta )", "similarity"),
        ("x = 1\nprint('hello wrold')\ny = 2\n", "print('hello world')", "similarity"),
    ],
)
def test_the_matcher_finds_misquoted_text(text: str, old: str, how: str) -> None:
    match = find_match(text, old)
    assert match is not None and match.count == 1 and match.how.startswith(how)


def test_the_matcher_refuses_ambiguity_and_absence() -> None:
    assert find_match("a\na\n", "a").count == 2
    assert find_match("x = 1 \nx = 1\t\n", "x = 1\n").count == 2
    assert find_match("completely different\n", "nothing like it at all") is None


async def test_write_file_creates_folders_and_replaces_a_file(tmp_path: Path) -> None:
    tool = WriteFileTool()
    first = await tool.run({"path": "notes/new.md", "content": "one\n"}, ctx(tmp_path))
    again = await tool.run({"path": "notes/new.md", "content": "two\n"}, ctx(tmp_path))
    assert not first.is_error and not again.is_error, (first.content, again.content)
    assert (tmp_path / "notes" / "new.md").read_text() == "two\n"
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["new.md"]  # no temporary file left behind
    bad = await tool.run({"path": "x.md", "content": 3}, ctx(tmp_path))
    assert bad.is_error and "'content' must be a string" in bad.content


async def test_edit_file_keeps_indentation_of_a_misindented_quote(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    if x:\n        return 1\n")
    result = await EditFileTool().run(
        {"path": "a.py", "old": "if x:\n    return 1", "new": "if y:\n    return 2"}, ctx(tmp_path)
    )
    assert not result.is_error, result.content
    assert (tmp_path / "a.py").read_text() == "def f():\n    if y:\n        return 2\n"


PATCH = """\
diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
@@ -6,2 +6,3 @@
 six
 seven
+seven and a half
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+fresh
+file
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


async def test_apply_patch_applies_all_hunks_creates_and_deletes(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    (tmp_path / "old.txt").write_text("bye\n")
    result = await ApplyPatchTool().run({"patch": PATCH}, ctx(tmp_path))
    assert not result.is_error, result.content
    assert (tmp_path / "a.txt").read_text() == "one\nTWO\nthree\nfour\nfive\nsix\nseven\nseven and a half\n"
    assert (tmp_path / "new.txt").read_text() == "fresh\nfile\n"
    assert not (tmp_path / "old.txt").exists()


async def test_apply_patch_tolerates_wrong_line_numbers_and_spacing(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("import os\n\n\ndef main():\n    print( 'hi' )\n")
    patch = "--- a/b.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n def main():\n-    print('hi')\n+    print('bye')\n"
    result = await ApplyPatchTool().run({"patch": patch}, ctx(tmp_path))
    assert not result.is_error, result.content
    assert "print('bye')" in (tmp_path / "b.py").read_text()


async def test_apply_patch_is_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    bad = PATCH.replace(" seven\n+seven and a half", " eleven\n+twelve")
    result = await ApplyPatchTool().run({"patch": bad}, ctx(tmp_path))
    assert result.is_error and "hunk 2" in result.content
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    assert not (tmp_path / "new.txt").exists()


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ("just prose", "no '--- '"),
        ("--- a/x\nnot a header\n", "'+++ ' header"),
        ("--- a/x\n+++ b/x\n@@ nonsense @@\n", "bad hunk header"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n*odd\n", "start with"),
    ],
)
def test_bad_patches_are_clear_errors(patch: str, fragment: str) -> None:
    from exo_core.errors import BadBodyError

    with pytest.raises(BadBodyError) as err:
        parse_patch(patch)
    assert fragment in err.value.message


class Panels:
    """Collects events of one core."""

    def __init__(self, core: Core) -> None:
        self.events: list[dict[str, Any]] = []
        self._sub = core.hub.subscribe(0)
        self.task = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        while True:
            item = await self._sub.next(timeout=None)
            if item is not None:
                self.events.append(json.loads(item.data))


async def test_search_recall_and_ui_through_the_loop(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {
                "text": "Looking.",
                "tool_calls": [
                    {"name": "search", "arguments": {"query": "zebra"}},
                    {"name": "recall", "arguments": {"query": "zebra"}},
                    {"name": "ui", "arguments": {"kind": "table", "title": "Zebras", "data": {"rows": [1, 2]}}},
                    {"name": "ui", "arguments": {"kind": "hologram"}},
                ],
            },
            {"text": "Done."},
        ]
    )
    home = ExoHome(tmp_path / "home")
    async with Core.open(home, model=model, options=CoreOptions(workspace=tmp_path)) as core:
        panels = Panels(core)
        session = (await core.engine.handle_raw({"id": "1", "type": "session.create", "body": {}})).result
        sid = session["session"]["id"]
        await core.engine.handle_raw(
            {"id": "2", "type": "turn.send", "body": {"session": sid, "text": "any zebra notes?"}}
        )
        for _ in range(200):
            if any(e["type"] == "turn.completed" for e in panels.events):
                break
            await asyncio.sleep(0.02)
        panels.task.cancel()
    results = [e["body"] for e in panels.events if e["type"] == "tool.completed"]
    by_call = {r["call_id"]: r for r in results}
    search, recall, ui, bad_ui = (by_call[f"call_0_{i}"] for i in range(4))
    assert search["ok"] and "zebra" in search["result"].lower()
    assert not recall["ok"] and "not configured" in recall["result"]
    assert ui["ok"] and not bad_ui["ok"]
    opened = [e["body"] for e in panels.events if e["type"] == "ui.panel"]
    assert opened == [{"kind": "table", "title": "Zebras", "data": {"rows": [1, 2]}}]


def test_tool_results_are_frozen_values() -> None:
    result = ToolResult("x")
    with pytest.raises(AttributeError):
        result.content = "y"  # type: ignore[misc]
