"""History import: ChatGPT conversations.json and JSON lines into searchable sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxutil import Db, dbenv  # noqa: F401 (fixture)

from exo_core.context.importer import import_conversations, parse_export, parse_jsonl
from exo_core.context.engine import SummaryTreeContext
from exo_core.context.scripted import ScriptedSummarizer
from exo_core.errors import UsageError


def chatgpt_export(n_msgs: int = 30) -> list[dict]:
    mapping: dict[str, dict] = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["sys"]},
        "sys": {
            "id": "sys",
            "parent": "root",
            "children": ["m0"],
            "message": {
                "author": {"role": "system"},
                "content": {"content_type": "text", "parts": [""]},
                "metadata": {"is_visually_hidden_from_conversation": True},
            },
        },
    }
    parent = "sys"
    for k in range(n_msgs):
        node = f"m{k}"
        role = "user" if k % 2 == 0 else "assistant"
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {"author": {"role": role}, "content": {"content_type": "text", "parts": [f"zebra{k} talk {k}"]}},
        }
        mapping[parent]["children"].append(node)
        parent = node
    # An abandoned branch off m1 that is not on the current path.
    mapping["alt"] = {
        "id": "alt",
        "parent": "m1",
        "children": [],
        "message": {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["abandoned branch"]}},
    }
    mapping["m1"]["children"].append("alt")
    mapping["tool"] = {
        "id": "tool",
        "parent": parent,
        "children": [],
        "message": {
            "author": {"role": "tool", "name": "browser"},
            "content": {"content_type": "text", "parts": ["page text"]},
        },
    }
    mapping[parent]["children"].append("tool")
    return [
        {"title": "Trip planning", "create_time": 1.0, "mapping": mapping, "current_node": "tool"},
        {"title": "Empty", "mapping": {}, "current_node": None},
    ]


def test_chatgpt_export_follows_the_current_branch(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()))
    convs = parse_export(path)
    assert len(convs) == 1
    conv = convs[0]
    assert conv.title == "Trip planning"
    assert [m.content for m in conv.messages][:2] == ["zebra0 talk 0", "zebra1 talk 1"]
    assert all("abandoned" not in m.content for m in conv.messages)
    assert conv.messages[-1].role == "assistant" and conv.messages[-1].content == "(tool output of browser) page text"
    assert len(conv.messages) == 31


def test_json_lines_in_both_shapes(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    lines = [
        {
            "title": "whole",
            "messages": [
                {"role": "human", "content": "hi"},
                {"role": "ai", "content": [{"type": "text", "text": "hello"}]},
            ],
        },
        {"conversation": "c1", "role": "user", "content": "first", "title": "split"},
        {"conversation": "c2", "role": "user", "content": "other"},
        {"conversation": "c1", "role": "assistant", "content": "second"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    convs = parse_export(path)
    assert [(c.title, [(m.role, m.content) for m in c.messages]) for c in convs] == [
        ("whole", [("user", "hi"), ("assistant", "hello")]),
        ("split", [("user", "first"), ("assistant", "second")]),
        ("c2", [("user", "other")]),
    ]


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("", "is empty"),
        ("[1, 2]", "conversation 0 has no 'mapping'"),
        ('[{"mapping": ', "not valid JSON"),
        ('{"role": "user"}\n', ":1: expected 'messages'"),
        ('{"role": "user", "content": "a"}\nnot json\n', ":2: not JSON"),
        ('{"messages": [3]}', "every message must be an object"),
    ],
)
def test_bad_exports_are_clear_typed_errors(tmp_path: Path, body: str, fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(body)
    with pytest.raises(UsageError, match=fragment):
        parse_export(path)


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        parse_export(tmp_path / "nope.json")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_json_lines_parser_never_fails_untyped(lines: list[str]) -> None:
    try:
        parse_jsonl(lines)
    except UsageError:
        pass


async def test_import_is_searchable_summarized_in_the_import_lane_and_idempotent(dbenv: Db, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(60)))
    summarizer = ScriptedSummarizer()
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=summarizer)
    engine.pause_import()
    report = await import_conversations(dbenv.worker, parse_export(path), engine=engine)
    assert (report.imported, report.messages) == (1, 61)
    session = report.session_ids[0]
    hits = await dbenv.worker.run(lambda: dbenv.store.search("zebra17"))
    assert [(h.session_id, h.role) for h in hits] == [(session, "assistant")]
    rows = await dbenv.nodes(session)
    assert {(r[4], r[5]) for r in rows} == {("pending", "import")} and len(rows) == 6
    assert summarizer.calls == 0  # paused
    engine.resume_import()
    await engine.lanes.wait_all_idle("import")
    assert all(r[4] == "done" for r in await dbenv.nodes(session))
    assert engine.stats()["lanes"]["import"]["started"] == 6 and engine.stats()["lanes"]["live"]["started"] == 0
    again = await import_conversations(dbenv.worker, parse_export(path), engine=engine)
    assert (again.imported, again.skipped) == (0, 1)
    await engine.close()


async def test_import_without_an_engine_leaves_pending_nodes_for_exod(dbenv: Db, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(40)))
    report = await import_conversations(dbenv.worker, parse_export(path))
    rows = await dbenv.nodes(report.session_ids[0])
    assert len(rows) == 3 and {(r[4], r[5]) for r in rows} == {("pending", "import")}
    engine = SummaryTreeContext(worker=dbenv.worker, summarizer=ScriptedSummarizer())
    await engine.start()
    await engine.lanes.wait_all_idle("import")
    assert all(r[4] == "done" for r in await dbenv.nodes(report.session_ids[0]))
    await engine.close()
