"""Plugins: manifests, loading from folders and entry points, rollback, exclusive slots, and in exod."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import write_script

from exo_core.client import ExoClient
from exo_core.errors import ConfigError
from exo_core.hooks import HookRegistry
from exo_core.plugins import PluginHost, parse_manifest_text
from exo_core.tools import builtin_tools

GOOD_MANIFEST = """\
# a comment
name: notes-tool   # trailing comment
version: "1.2"
description: 'Keeps # notes'
provides:
  - tool
  - hook
requires_env: [NOTES_DIR, "OTHER"]
enabled: true
priority: 3
"""


def test_manifest_subset() -> None:
    data = parse_manifest_text(GOOD_MANIFEST)
    assert data == {
        "name": "notes-tool",
        "version": "1.2",
        "description": "Keeps # notes",
        "provides": ["tool", "hook"],
        "requires_env": ["NOTES_DIR", "OTHER"],
        "enabled": True,
        "priority": 3,
    }


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: a\nconfig:\n  key: value\n", ":3: only '  - item'"),
        ("name: a\ndescription: |\n  long\n", ":2: '|'"),
        ("name: a\nname: b\n", ":2: 'name' appears twice"),
        ("name: &x a\n", "anchors"),
        ("name: a\nlist: [a, [b]]\n", "nested lists"),
        ("name: 'unclosed\n", "unclosed quote"),
        ("just words\n", ":1: expected 'key: value'"),
        ("name: a\n---\nname: b\n", "one YAML document"),
    ],
)
def test_manifest_refuses_what_it_does_not_read(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_manifest_text(text, "p.yaml")
    assert fragment in err.value.message


def make_plugin(root: Path, name: str, body: str, manifest: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(manifest or f"name: {name}\nversion: 1\n")
    (folder / "__init__.py").write_text(textwrap.dedent(body))
    return folder


def fresh_host() -> PluginHost:
    return PluginHost(builtin_tools(), HookRegistry())


def snapshot(host: PluginHost) -> tuple[Any, ...]:
    return (
        [s.name for s in host.tools.specs()],
        {n: len(host.hooks.callbacks(n)) for n in ("pre_tool_call", "post_tool_call")},
        dict(host.commands),
        dict(host.channels),
        dict(host.skills),
        dict(host.slots),
    )


def test_a_plugin_registers_everything_it_offers(tmp_path: Path) -> None:
    make_plugin(
        tmp_path,
        "notes",
        """
        def register(ctx):
            ctx.register_tool("take_note", {"type": "object", "properties": {"text": {"type": "string"}}},
                              lambda text: "noted: " + text, description="Take a note.", risk="low")
            ctx.register_hook("pre_tool_call", lambda **kw: None)
            ctx.register_command("notes", lambda args: "list", "list notes")
            ctx.register_channel("inbox", object())
            ctx.register_skill("summarize", "Summarize in three lines.")
    """,
    )
    host = fresh_host()
    record = host.load_folder(tmp_path / "notes")
    assert record.status == "loaded", record.error
    assert set(record.registered) == {
        "tool:take_note",
        "hook:pre_tool_call",
        "command:notes",
        "channel:inbox",
        "skill:summarize",
    }
    assert host.tools.get("take_note") is not None and host.tools.get("take_note").spec.toolset == "notes"


def test_a_plugin_that_raises_in_register_leaves_nothing_behind(tmp_path: Path) -> None:
    make_plugin(
        tmp_path,
        "broken",
        """
        class Memory:
            async def system_block(self, session_id, text): return ""
            async def on_exchange(self, session_id, user_text, answer): return None

        def register(ctx):
            ctx.register_tool("half_done", {"type": "object"}, lambda: "x")
            ctx.register_hook("pre_tool_call", lambda **kw: "block")
            ctx.register_hook("post_tool_call", lambda **kw: None)
            ctx.register_command("half", lambda args: None)
            ctx.register_channel("half", object())
            ctx.register_skill("half", "text")
            ctx.register_memory_provider(Memory())
            raise RuntimeError("configuration missing: set NOTES_DIR")
    """,
    )
    host = fresh_host()
    before = snapshot(host)
    record = host.load_folder(tmp_path / "broken")
    assert record.status == "failed" and "NOTES_DIR" in record.error
    assert snapshot(host) == before
    assert host.records["broken"].error == record.error


def test_a_plugin_that_fails_to_import_is_recorded(tmp_path: Path) -> None:
    make_plugin(tmp_path, "syntax", "def register(ctx):\n    return (\n")
    make_plugin(tmp_path, "noreg", "X = 1\n")
    folder = tmp_path / "nomanifest"
    folder.mkdir()
    (folder / "plugin.yaml").write_text("name: BAD NAME\n")
    host = fresh_host()
    records = host.load_folders(tmp_path)
    assert [r.status for r in records] == ["failed", "failed", "failed"]
    assert "register(ctx)" in host.records["noreg"].error
    assert "SyntaxError" in host.records["syntax"].error
    assert "'name'" in host.records["nomanifest"].error


MEMORY_PLUGIN = """
    class Memory:
        def __init__(self):
            self.tag = "{tag}"
        async def system_block(self, session_id, text): return "memory " + self.tag
        async def on_exchange(self, session_id, user_text, answer): return None

    def register(ctx):
        ctx.register_tool("{tag}_tool", {{"type": "object"}}, lambda: "x")
        ctx.register_memory_provider(Memory())
"""


def test_two_memory_providers_cannot_both_take_the_slot(tmp_path: Path) -> None:
    make_plugin(tmp_path, "mem-a", MEMORY_PLUGIN.format(tag="a"))
    make_plugin(tmp_path, "mem-b", MEMORY_PLUGIN.format(tag="b"))
    host = fresh_host()
    first, second = host.load_folders(tmp_path)
    assert first.status == "loaded" and second.status == "failed"
    assert "held by plugin 'mem-a'" in second.error
    assert host.slots["memory_provider"][0] == "mem-a"
    assert host.tools.get("b_tool") is None, "the loser is rolled back whole"
    from exo_core.engine.core import CoreOptions

    options = host.apply(CoreOptions(tools=host.tools, hooks=host.hooks))
    assert options.memory.tag == "a"
    engine = fresh_host()
    engine.register("ctx-a", lambda ctx: ctx.register_context_engine(object()))
    assert engine.register("ctx-b", lambda ctx: ctx.register_context_engine(object())).status == "failed"


def test_entry_point_plugins_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "exo_sample_plugin").mkdir(parents=True)
    (site / "exo_sample_plugin" / "__init__.py").write_text(
        "def register(ctx):\n    ctx.register_skill('sample', 'from an installed package')\n"
    )
    dist = site / "exo_sample_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: exo-sample-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[exo.plugins]\nsample = exo_sample_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    host = fresh_host()
    records = [r for r in host.load_entry_points() if r.name == "sample"]
    assert records and records[0].status == "loaded"
    assert host.skills["sample"] == "from an installed package"
    sys.modules.pop("exo_sample_plugin", None)


GUARD_PLUGIN = """
    calls = []

    def pre(tool_name, arguments, **kw):
        if tool_name == "bash" and "forbidden" in arguments.get("command", ""):
            return {"action": "block", "reason": "the guard plugin forbids this"}
        if tool_name == "read_file":
            return "ask"
        return None

    def broken(**kw):
        raise ValueError("a broken hook")

    def transform(result, tool_name, **kw):
        return result.upper() if tool_name == "shout" else None

    def register(ctx):
        ctx.register_hook("pre_tool_call", broken)
        ctx.register_hook("pre_tool_call", pre)
        ctx.register_hook("transform_tool_result", transform)
        ctx.register_tool("shout", {"type": "object", "properties": {"text": {"type": "string"}},
                                    "required": ["text"]}, lambda text: text, risk="low")
"""


async def test_plugin_hooks_block_ask_and_transform_in_exod(exod_factory, tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_plugin(home / "plugins", "guard", GUARD_PLUGIN)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("apples\n")
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "",
                "tool_calls": [
                    {"name": "shout", "arguments": {"text": "quiet words"}},
                    {"name": "bash", "arguments": {"command": "echo forbidden"}},
                    {"name": "read_file", "arguments": {"path": "a.txt"}},
                ],
            },
            {"text": "done"},
        ],
    )
    exod = exod_factory(home, script, ws)
    async with ExoClient(exod.url) as client:
        session = (await client.request("session.create", {}))["session"]["id"]
        turn = (await client.request("turn.send", {"session": session, "text": "go"}))["turn_id"]
        seen: list[Any] = []

        async def follow() -> None:
            async for event in client.events(since=0, session=session):
                seen.append(event)
                if event.type == "approval.requested":
                    await client.request(
                        "approval.respond", {"request_id": event.body["request_id"], "decision": "deny"}
                    )
                if event.type == "turn.completed":
                    return

        await asyncio.wait_for(follow(), 30)
    results = {e.body["name"]: e.body for e in seen if e.type == "tool.completed"}
    assert results["shout"]["result"] == "QUIET WORDS"
    assert "blocked: the guard plugin forbids this" in results["bash"]["result"]
    assert not any(e.type == "tool.output" for e in seen), "a blocked command never runs"
    requested = [e for e in seen if e.type == "approval.requested"]
    assert [e.body["tool"] for e in requested] == ["read_file"], "a hook can ask for a call the gate allows"
    assert "denied" in results["read_file"]["result"]
    assert "a broken hook" in exod.log.read_text(), "the failing hook was logged and skipped"
    assert turn
