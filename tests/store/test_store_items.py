"""Items and importers: deterministic, de-duplicated, redacted, rebuildable from the ledger."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.ledger import Ledger
from exo_core.store import ItemStore, Store, rebuild_items
from exo_core.store.errors import ImportFormatError
from exo_core.store.importers import import_bookmarks, import_chat_export, import_notes
from exo_core.store.items import normalize_url
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)

BOOKMARKS = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3 ADD_DATE="1700000000">Reading</H3>
    <DL><p>
        <DT><A HREF="https://Example.org/essay/?utm_source=x&b=2&a=1#part" ADD_DATE="1700000001">An essay</A>
        <DT><A HREF="https://example.org/essay?a=1&b=2" ADD_DATE="1700000002">Same essay again</A>
        <DT><A HREF="javascript:alert(1)">bookmarklet</A>
    </DL><p>
    <DT><A HREF="https://tools.example/api?api_key=abcd1234efgh" ADD_DATE="1700000003" TAGS="dev,api">Tool with key</A>
</DL><p>
"""


def _items(store: Store, ledger: Ledger) -> ItemStore:
    return ItemStore(store.items_path, ledger, scope=store.scope)


def test_normalize_url() -> None:
    assert normalize_url("HTTPS://Example.ORG:443/a/?utm_medium=x&z=1&a=2#frag") == "https://example.org/a?a=2&z=1"
    assert normalize_url("http://h.example:8080/") == "http://h.example:8080/"


def test_bookmarks_import_is_idempotent_deduped_and_redacted(tmp_path: Path, store: Store, ledger: Ledger) -> None:
    path = tmp_path / "bookmarks.html"
    path.write_text(BOOKMARKS)
    items = _items(store, ledger)
    report = import_bookmarks(path, items)
    assert report.counts == {"added": 2, "duplicate": 1, "skipped": 1}
    assert report.redacted == 1
    assert "abcd1234efgh" not in json.dumps([i.ledger_body() for i in items.all()])
    before = ledger.count()
    again = import_bookmarks(path, items)
    assert again.counts == {"unchanged": 2, "duplicate": 1, "skipped": 1}
    assert ledger.count() == before, "re-running an import must change nothing"
    essay = next(i for i in items.all() if i.title == "An essay")
    assert essay.tags == ("Reading",) and essay.added == "2023-11-14" and essay.tier == "curated"
    tool = next(i for i in items.all() if i.title == "Tool with key")
    assert tool.tags == ("dev", "api")
    entries = list(ledger.entries(kind="item"))
    assert len(entries) == 2 and all(e.scope == "person" for e in entries)


def test_items_rebuild_from_ledger_is_identical(tmp_path: Path, store: Store, ledger: Ledger) -> None:
    (tmp_path / "b.html").write_text(BOOKMARKS)
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / "a.md").write_text("---\ntitle: Alpha\ntags: [x, y]\n---\nbody of alpha\n")
    (vault / "sub").mkdir()
    (vault / "sub" / "b.md").write_text("# Beta note\n\ntext with password: hunter2secret\n")
    items = _items(store, ledger)
    import_bookmarks(tmp_path / "b.html", items)
    notes = import_notes(vault, items)
    assert notes.counts == {"added": 2} and notes.redacted == 1
    items.set_review(items.all()[0].id, "kept")
    (vault / "a.md").write_text("---\ntitle: Alpha\n---\nbody of alpha, edited\n")
    assert import_notes(vault, items).counts == {"updated": 1, "unchanged": 1}
    snapshot = [i for i in items.all()]
    items.close()
    store.items_path.unlink()
    assert rebuild_items(store.items_path, ledger) == len(snapshot)
    with ItemStore(store.items_path, ledger) as rebuilt:
        assert rebuilt.all() == snapshot
    beta = next(i for i in snapshot if i.title == "Beta note")
    assert "hunter2secret" not in beta.body and "[redacted:password]" in beta.body


def test_nested_scope_is_recorded(store: Store, ledger: Ledger, tmp_path: Path) -> None:
    agent = store.add_nested("agent", "helper")
    (tmp_path / "b.html").write_text(BOOKMARKS)
    items = ItemStore(agent.items_path, ledger, scope=agent.scope)
    import_bookmarks(tmp_path / "b.html", items)
    assert {e.scope for e in ledger.entries(kind="item")} == {"agent:helper"}
    assert agent.items_path == store.items_path


CHAT = {
    "conversations": [
        {
            "id": "c1",
            "messages": [
                {
                    "id": "m1",
                    "role": "user",
                    "text": "I prefer tables. my token is sk-abcdefghijklmnopqrstuvwx",
                    "ts": 1,
                },
                {"id": "m2", "role": "assistant", "text": "Noted."},
                {"id": "m3", "role": "user", "text": "Keep it short."},
            ],
        }
    ]
}
CHATGPT = [
    {
        "id": "g1",
        "title": "x",
        "mapping": {
            "n1": {
                "message": {
                    "id": "a",
                    "author": {"role": "user"},
                    "create_time": 2,
                    "content": {"content_type": "text", "parts": ["second"]},
                }
            },
            "n0": {
                "message": {
                    "id": "b",
                    "author": {"role": "user"},
                    "create_time": 1,
                    "content": {"content_type": "text", "parts": ["first"]},
                }
            },
            "n2": {"message": None},
        },
    }
]


def test_chat_export_enters_ledger_as_utterances(tmp_path: Path, store: Store, ledger: Ledger) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    report = import_chat_export(path, ledger)
    assert report.counts == {"utterances": 2, "not-the-person": 1} and report.redacted == 1
    texts = [e.body["text"] for e in ledger.entries(kind="utterance")]
    assert texts == ["I prefer tables. my token is [redacted:api-key]", "Keep it short."]
    import_chat_export(path, ledger)
    assert len(list(ledger.entries(kind="utterance"))) == 2
    gpt = tmp_path / "conversations.json"
    gpt.write_text(json.dumps(CHATGPT))
    import_chat_export(gpt, ledger)
    assert [e.body["text"] for e in ledger.entries(kind="utterance")][2:] == ["first", "second"]
    assert not store.items_path.exists() or ItemStore(store.items_path, ledger).count() == 0


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        ("chat.json", '{"conversations": [\n{"id": 1,\n "messages": [}\n]}', 3),
        ("chat.json", '{"conversations": 5}', None),
        ("chat.json", '{"conversations": [{"id": "x", "messages": [{"text": "no role"}]}]}', None),
        ("b.html", "<html><a href='x'>no doctype</a></html>", 1),
        ("b.html", "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL>\n<DT><A ADD_DATE='1'>no href</A>\n</DL>", 3),
        (
            "b.html",
            "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL>\n<DT><A HREF='http://x.example' ADD_DATE='soon'>t</A>",
            3,
        ),
        ("b.html", "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL>\n<DT><A HREF='http://[::1'>t</A>", 3),
    ],
)
def test_malformed_import_files_name_file_and_line(
    tmp_path: Path, store: Store, ledger: Ledger, name: str, content: str, line: int | None
) -> None:
    path = tmp_path / name
    path.write_text(content)
    items = _items(store, ledger)
    before = ledger.count()
    with pytest.raises(ImportFormatError) as info:
        if name.endswith(".json"):
            import_chat_export(path, ledger)
        else:
            import_bookmarks(path, items)
    assert str(path) in str(info.value)
    if line is not None:
        assert info.value.line == line
    assert ledger.count() == before


def test_non_utf8_note_is_refused_with_line(tmp_path: Path, store: Store, ledger: Ledger) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "ok.md").write_text("fine\n")
    (vault / "bad.md").write_bytes(b"line one\nline two \xff\n")
    with pytest.raises(ImportFormatError) as info:
        import_notes(vault, _items(store, ledger))
    assert info.value.line == 2 and "bad.md" in str(info.value)
    assert ledger.count() == 0, "nothing is written when any file of the import is bad"


@given(st.binary(max_size=600))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzz_import_files(tmp_path: Path, store: Store, ledger: Ledger, data: bytes) -> None:
    """Random bytes as any import file: imported or a typed error; stored items never lost."""
    items = _items(store, ledger)
    before = {i.id for i in items.all()}
    for name, run in (
        ("f.html", lambda p: import_bookmarks(p, items)),
        ("f.json", lambda p: import_chat_export(p, ledger)),
    ):
        path = tmp_path / name
        path.write_bytes(b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n" + data if name.endswith("html") else data)
        try:
            run(path)
        except ImportFormatError as exc:
            assert str(path) in str(exc)
    assert before <= {i.id for i in items.all()}
    items.close()
    assert sqlite3.connect(store.items_path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
