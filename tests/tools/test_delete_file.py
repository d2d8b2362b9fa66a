"""``delete_file``: what it deletes and refuses, that the gate asks first on a real exod, and that a small
model's worked examples never show it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from exo_testkit import write_script

from exo_core.client import ExoClient
from exo_core.gate import classify
from exo_core.seams.model import ChatMessage
from exo_core.tools import DeleteFileTool, ToolContext, builtin_tools
from exo_edge.manifest import PromptFormat
from exo_edge.prompting import render_completion


async def _no_output(text: str, stream: str) -> None:
    return None


async def test_delete_file_deletes_one_file_and_refuses_the_rest(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, call_id="c1", emit_output=_no_output)
    (tmp_path / "notes.txt").write_text("keep?\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "inside.txt").write_text("x")
    tool = DeleteFileTool()
    done = await tool.run({"path": "notes.txt"}, ctx)
    assert not done.is_error and done.content == f"deleted {tmp_path / 'notes.txt'}"
    assert not (tmp_path / "notes.txt").exists()
    missing = await tool.run({"path": "notes.txt"}, ctx)
    assert missing.is_error and "no such file" in missing.content
    folder = await tool.run({"path": "folder"}, ctx)
    assert folder.is_error and "is a directory" in folder.content
    assert (tmp_path / "folder" / "inside.txt").exists(), "a directory is never deleted"
    bad = await tool.run({"path": 3}, ctx)
    assert bad.is_error and "'path' must be a non-empty string" in bad.content


def test_the_gate_judges_every_delete_file_call_irreversible() -> None:
    for arguments in ({"path": "notes.txt"}, {}, {"path": "/etc/passwd"}):
        assert classify("delete_file", arguments).axes.reversibility == "irreversible"
    assert "delete_file" in [s.name for s in builtin_tools().specs()]


def test_each_builtin_spec_says_irreversible_exactly_when_the_gate_judges_it_so() -> None:
    """The prompt reads the fact from the spec; the spec and the gate must agree on it."""
    specs = builtin_tools().specs()
    judged = {s.name for s in specs if classify(s.name, {}).axes.reversibility == "irreversible"}
    declared = {s.name for s in specs if s.irreversible}
    assert declared == judged == {"delete_file"}
    assert [s.to_model().get("irreversible") for s in specs if s.name == "delete_file"] == [True]


def test_worked_examples_never_show_an_irreversible_tool() -> None:
    fmt = PromptFormat(format="completion", preamble="An assistant.", stop=("\nQuestion:",))
    tools = [s.to_model() for s in builtin_tools().specs()]
    prompt = render_completion((ChatMessage("user", "Hi?"),), fmt, tools)
    assert "- delete_file(path: string): Delete a file." in prompt, "it is offered"
    assert 'CALL {"name": "delete_file"' not in prompt, "but never shown as an example to copy"
    assert prompt.count('Answer: CALL {"name": ') == 4


async def test_delete_file_asks_first_on_a_real_exod(exod_factory: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("old notes\n")
    call = {"name": "delete_file", "arguments": {"path": "notes.txt"}}
    script = write_script(
        tmp_path / "s.json",
        [{"text": "", "tool_calls": [call]}, {"text": "kept"}, {"text": "", "tool_calls": [call]}, {"text": "deleted"}],
    )
    exod = exod_factory(tmp_path / "home", script, ws)
    async with ExoClient(exod.url) as client:
        session = (await client.request("session.create", {}))["session"]["id"]
        seen: list[Any] = []

        async def turn(decision: str) -> None:
            await client.request("turn.send", {"session": session, "text": "delete my notes file"})
            async for event in client.events(since=len(seen) and seen[-1].seq, session=session):
                seen.append(event)
                if event.type == "approval.requested":
                    await client.request(
                        "approval.respond", {"request_id": event.body["request_id"], "decision": decision}
                    )
                if event.type == "turn.completed":
                    return

        await asyncio.wait_for(turn("deny"), 30)
        assert (ws / "notes.txt").exists(), "a denied delete deletes nothing"
        await asyncio.wait_for(turn("allow"), 30)
    assert not (ws / "notes.txt").exists()
    asked = [e.body["tool"] for e in seen if e.type == "approval.requested"]
    assert asked == ["delete_file", "delete_file"]
    results = [e.body for e in seen if e.type == "tool.completed"]
    assert [r["ok"] for r in results] == [False, True] and "denied" in results[0]["result"]
