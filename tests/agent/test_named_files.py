"""Files the person names in a message point to their reads (exo_core/agent/named_files.py; docs/models.md).

A real workspace folder on disk; the loop through the real engine with a
scripted model, which records each request it is given.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.agent.named_files import asks_for_change, named_files, pointed_reads, unread
from exo_core.agent.scripted import ScriptedModel
from exo_core.seams.model import ToolCall

TOOLS = [
    {"name": "read_file", "description": "Read a UTF-8 text file."},
    {"name": "write_file", "description": "Create or replace a UTF-8 text file with 'content'."},
    {"name": "edit_file", "description": "Replace the text 'old' with 'new' in a file."},
    {"name": "recall", "description": "Recall what the person's store knows about 'query'."},
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    (root / "todo.txt").write_text("- call the plumber about the boiler\n")
    (root / "Report.MD").write_text("# report\n")
    (root / "notes" / "plan.md").write_text("plan\n")
    (root / "meeting notes.txt").write_text("minutes\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return root


def _paths(text: str, ws: Path) -> list[str]:
    return [c.arguments["path"] for c in pointed_reads(text, ws, TOOLS)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What does my todo.txt say I should call the plumber about?", ["todo.txt"]),
        ("Is the boiler on TODO.TXT?", ["todo.txt"]),
        ("what's in report.md", ["Report.MD"]),
        ("Summarise `notes/plan.md` for me", ["notes/plan.md"]),
        ("Does 'todo.txt' mention milk?", ["todo.txt"]),
        ('What is in "meeting notes.txt"?', ["meeting notes.txt"]),
        ("What does my todo file say?", ["todo.txt"]),
        ("How long is the report file?", ["Report.MD"]),
        ("Compare todo.txt and notes/plan.md.", ["todo.txt", "notes/plan.md"]),
        ("What should I change in todo.txt?", ["todo.txt"]),
    ],
)
def test_a_named_existing_file_points_to_its_read(ws: Path, text: str, expected: list[str]) -> None:
    assert _paths(text, ws) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of France?",
        "What does my shopping.txt say?",  # no such file
        "Create shopping.txt with milk in it",  # a new file is write_file's business
        "Add oat milk to todo.txt",  # a change: the model decides, the judge rules
        "Write 'done' into todo.txt",
        "Can you delete todo.txt?",
        "Replace boiler with sink in my todo file",
        "What does ../secret.txt say?",  # outside the workspace
        "Read /etc/hostname.txt",
        "What does my plan file say?",  # only the top folder's stems count
        "What version is 3.11 of python?",
        "e.g. the usual",
    ],
)
def test_nothing_is_pointed_at_for_other_messages(ws: Path, text: str) -> None:
    assert _paths(text, ws) == []


def test_without_the_read_tool_offered_nothing_is_pointed_at(ws: Path) -> None:
    assert pointed_reads("What does todo.txt say?", ws, [t for t in TOOLS if t["name"] != "read_file"]) == ()


def test_a_symlink_out_of_the_workspace_is_not_followed(ws: Path) -> None:
    (ws / "link.txt").symlink_to(ws.parent / "secret.txt")
    assert _paths("What is in link.txt?", ws) == []


def test_two_files_differing_only_in_case_need_the_exact_name(ws: Path) -> None:
    (ws / "Todo.TXT").write_text("other\n")
    if len([p for p in ws.iterdir() if p.name.lower() == "todo.txt"]) < 2:
        pytest.skip("a case-insensitive file system keeps one of the two")
    assert _paths("What does todo.txt say?", ws) == ["todo.txt"]
    assert _paths("What does TODO.txt say?", ws) == []  # two candidates: ambiguous, nothing read


def test_a_plugins_changing_tool_adds_its_verb(ws: Path) -> None:
    tools = [*TOOLS, {"name": "purge_notes", "description": "Purge old notes."}]
    assert asks_for_change("Purge todo.txt", TOOLS) is False  # "purge" is no change verb by itself
    assert asks_for_change("Purge todo.txt", tools) is True  # the gate counts purge_notes as a deletion
    assert asks_for_change("Please rename todo.txt", TOOLS) is True
    assert asks_for_change("What did I rename in todo.txt?", TOOLS) is False


def test_a_read_already_made_is_not_pointed_at_again() -> None:
    pointed = (
        ToolCall("pointed_0", "read_file", {"path": "todo.txt"}),
        ToolCall("pointed_1", "read_file", {"path": "notes/plan.md"}),
    )
    made = [ToolCall("call_0", "read_file", {"path": "./todo.txt", "start": 1, "end": 1})]
    assert unread(pointed, made) == pointed[1:]
    assert unread(pointed, [ToolCall("call_0", "read_file", {"path": "plan.md"})]) == pointed[:1]
    assert unread(pointed, []) == pointed


_NAME = st.builds(
    str.__add__,
    st.sampled_from(string.ascii_letters + string.digits),
    st.text(string.ascii_letters + string.digits + "_-", max_size=11),
)
_EXT = st.sampled_from(["txt", "md", "py", "toml", "csv"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(stem=_NAME, ext=_EXT, before=st.text(max_size=40), after=st.text(max_size=40), upper=st.booleans())
def test_any_sentence_naming_an_existing_file_finds_it_and_nothing_outside(
    tmp_path: Path, stem: str, ext: str, before: str, after: str, upper: bool
) -> None:
    root = tmp_path / "fuzz"
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    name = f"{stem}.{ext}"
    (root / name).write_text("x")
    said = name.upper() if upper else name
    text = f"{before} {said} {after}"
    found = named_files(text, root)
    assert all((root / p).resolve().is_relative_to(root.resolve()) and (root / p).is_file() for p in found)
    assert name in found


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text(max_size=300) | st.text("todo.txt/ '\"`.-_~\0TODOmy file", max_size=80))
def test_any_text_gives_existing_files_inside_or_nothing_never_an_error(ws: Path, text: str) -> None:
    found = named_files(text, ws)
    assert len(found) <= 3
    for path in found:
        assert (ws / path).is_file() and (ws / path).resolve().is_relative_to(ws.resolve())
    assert isinstance(asks_for_change(text, TOOLS), bool)
    assert named_files(text, ws.parent / "no-such-workspace") == []


async def test_the_loop_offers_the_read_until_the_file_was_read(tmp_path: Path) -> None:
    from corekit import CoreHarness

    from exo_core.engine.core import Core, CoreOptions
    from exo_core.seams.home import ExoHome

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "todo.txt").write_text("- call the plumber about the boiler\n")
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "todo.txt"}}]},
            {"text": "About the boiler."},
            {"text": "Paris."},
        ]
    )
    core = Core.open(ExoHome(tmp_path / "home"), model=model, options=CoreOptions(workspace=ws, synchronous="NORMAL"))
    await core.__aenter__()
    h = CoreHarness(core)
    try:
        session = (await h.ok("session.create", title="t"))["session"]["id"]
        turn = await h.ok("turn.send", session=session, text="What does my todo.txt say about the plumber?")
        await h.turn_done(turn["turn_id"])
        turn = await h.ok("turn.send", session=session, text="What is the capital of France?")
        await h.turn_done(turn["turn_id"])
    finally:
        await h.close()
        await core.__aexit__(None, None, None)
    pointed = [r.pointed for r in model.requests]
    assert pointed[0] == (ToolCall("pointed_0", "read_file", {"path": "todo.txt"}),)
    assert pointed[1] == ()  # read in the first round: not offered again
    assert pointed[2] == ()  # a general question names no file
