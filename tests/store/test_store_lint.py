"""Lint: the template and a fresh store are clean; each rule fires with file, line and rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from exo_core.store import Link, Node, Store, template_path
from exo_core.store.lint import lint_store
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)


def test_template_lints_clean() -> None:
    report = lint_store(template_path())
    assert report.findings == (), [str(f) for f in report.findings]


def test_fresh_store_lints_clean(store: Store) -> None:
    assert lint_store(store.root).clean


def _node(node_id: str, **over: object) -> Node:
    domain = node_id.split("/")[0]
    base: dict[str, object] = dict(
        id=node_id,
        title="T",
        type="fact",
        domain=domain,
        summary=f"Summary of {node_id} that is long enough.",
        load_when="",
        confidence="medium",
        stability="durable",
        valid_from="2025-01-01",
    )
    base.update(over)
    return Node(**base)  # type: ignore[arg-type]


def _rules(store: Store) -> set[tuple[str, str]]:
    return {(f.path, f.rule) for f in lint_store(store.root).findings}


def test_store_with_nodes_is_clean(store: Store) -> None:
    store.write_node(_node("self/home-town"))
    store.write_node(_node("taste/tables", links=(Link("evidence-for", "self/home-town"),)))
    assert lint_store(store.root).clean


def test_rules_fire_with_file_and_line(store: Store) -> None:
    root = store.root
    store.write_node(_node("self/a"))
    (root / "self" / "b.md").write_text((root / "self" / "a.md").read_text().replace("id: self/a", "id: self/x"))
    (root / "self" / "c.md").write_text("---\nid: self/c\ntitle: T\n---\n")
    store.write_node(_node("work/d", links=(Link("see-also", "work/missing"),)))
    (root / "pack.md").write_text(
        (root / "pack.md").read_text()
        + "\nCall +44 20 7946 0958.\nkey sk-abcdefghijklmnopqrstuvwxyz012345\n[[nowhere/x]]\n"
        + "It took 4 corrections.\n"
        + _node("self/a").summary
        + "\n"
    )
    (root / "work" / "notes.md").write_bytes(b"---\nid: work/notes\n\xff\xfe\n---\n")
    (root / "taste" / "INDEX.md").write_text("# Taste\n\n## Load rules\n\n- broken rule without arrow\n")
    findings = lint_store(root).findings
    got = {(f.path, f.rule): f for f in findings}
    assert ("self/b.md", "id-mismatch") in got and got[("self/b.md", "id-mismatch")].line == 2
    assert got[("self/c.md", "missing-key")].severity == "error"
    assert got[("work/d.md", "dangling-link")].line > 1
    pack_rules = {f.rule: f.line for f in findings if f.path == "pack.md"}
    base = len((template_path() / "pack.md").read_text().split("\n"))
    assert pack_rules["leak-phone"] == base + 1
    assert pack_rules["leak-api-key"] == base + 2
    assert pack_rules["dangling-link"] == base + 3
    assert pack_rules["restated-count"] == base + 4
    assert pack_rules["pack-copy"] == base + 5
    assert got[("work/notes.md", "not-utf8")].line == 3
    assert got[("taste/INDEX.md", "router")].line == 5
    for f in findings:
        assert str(f).startswith(f"{f.path}:{f.line}: {f.severity} [{f.rule}]")


def test_missing_pack_router_and_domain_router(store: Store) -> None:
    (store.root / "pack.md").unlink()
    (store.root / "INDEX.md").unlink()
    (store.root / "people" / "INDEX.md").unlink()
    rules = _rules(store)
    assert ("pack.md", "missing-pack") in rules
    assert ("INDEX.md", "missing-router") in rules
    assert ("people/INDEX.md", "missing-router") in rules


def test_supersede_keeps_old_belief(store: Store) -> None:
    store.write_node(_node("taste/old"))
    store.supersede("taste/old", _node("taste/new"), on="2025-06-01")
    old = store.read_node("taste/old")
    assert old.valid_until == "2025-06-01"
    assert Link("supersedes", "taste/old") in store.read_node("taste/new").links
    assert lint_store(store.root).clean
    # A successor whose predecessor is still marked valid is a warning.
    store.write_node(_node("taste/newer", links=(Link("supersedes", "taste/new"),)))
    assert ("taste/newer.md", "superseded-still-valid") in _rules(store)


def test_unrouted_domain_and_new_domain_is_routed(store: Store) -> None:
    store.write_node(_node("health/sleep"))  # write_node creates and routes the domain
    assert lint_store(store.root).clean
    (store.root / "travel").mkdir()
    (store.root / "travel" / "INDEX.md").write_text("# Travel\n")
    assert ("INDEX.md", "unrouted-domain") in _rules(store)


def test_router_load_rules(store: Store) -> None:
    store.write_node(_node("taste/commit-style"))
    index = store.root / "taste" / "INDEX.md"
    index.write_text(index.read_text() + "- commit message | git commit -> [[taste/commit-style]]\n")
    assert lint_store(store.root).clean
    assert store.router("taste").pins("please write the commit message") == ("taste/commit-style",)
    assert store.router("taste").pins("unrelated") == ()
    index.write_text(index.read_text() + "- ghost -> [[taste/ghost]]\n")
    assert ("taste/INDEX.md", "dangling-link") in _rules(store)


def test_nested_store_scope_and_private_nodes(store: Store) -> None:
    store.write_node(_node("self/diary", private=True))
    store.write_node(_node("self/city"))
    agent = store.add_nested("agent", "writer")
    assert agent.scope == "agent:writer"
    assert agent.ledger_path == store.root / "ledger.sqlite"
    assert lint_store(store.root).clean
    visible = {n.id for n in agent.visible_nodes()}
    assert "self/city" in visible and "self/diary" not in visible
    agent.write_node(_node("work/brief", links=(Link("applies-to", "self/city"),)))
    assert lint_store(store.root).clean
    agent.write_node(_node("work/peek", links=(Link("see-also", "self/diary"),)))
    agent.write_node(_node("work/copy", summary=_node("self/city").summary))
    rules = _rules(store)
    assert ("agents/writer/work/peek.md", "private-link") in rules
    assert ("agents/writer/work/copy.md", "duplicate-fact") in rules
    assert [s.scope for s in store.nested()] == ["agent:writer"]


@pytest.mark.parametrize(
    "text",
    [
        "password: hunter2hunter",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
        "ghp_" + "a" * 36,
        "AKIA" + "A" * 16,
        "(555) 123-4567",
    ],
)
def test_leaks_in_any_curated_file(store: Store, text: str) -> None:
    (store.root / "work" / "scratch.txt").write_text("ok\n" + text + "\n")
    findings = [f for f in lint_store(store.root).findings if f.rule.startswith("leak-")]
    assert findings and findings[0].path == "work/scratch.txt" and findings[0].line == 2


def test_private_files_are_not_scanned(store: Store) -> None:
    (store.root / "raw").mkdir()
    (store.root / "raw" / "dump.txt").write_text("password: hunter2hunter\n")
    (store.root / "indexes").mkdir()
    (store.root / "indexes" / "x.json").write_text('{"token": "sk-abcdefghijklmnopqrstuvwxyz"}')
    assert lint_store(store.root).clean


def test_lint_names_bad_store_toml(tmp_path: Path) -> None:
    (tmp_path / "STORE.toml").write_text('format = 2\nkind = "person"\nstore_id = 7\n')
    findings = lint_store(tmp_path).findings
    assert [(f.path, f.line, f.rule) for f in findings] == [("STORE.toml", 3, "store-toml")]


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: ("---\n" + t).encode("utf-8", "replace")))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_node_file_in_a_store(store: Store, data: bytes) -> None:
    """A garbage node file is reported with its file and line; nothing else changes or breaks."""
    good = store.root / "self" / "good.md"
    if not good.exists():
        store.write_node(_node("self/good"))
    before = {p: p.read_bytes() for p in store.root.rglob("*") if p.is_file() and p.name != "fuzz.md"}
    (store.root / "work" / "fuzz.md").write_bytes(data)
    findings = [f for f in lint_store(store.root).findings if f.path == "work/fuzz.md"]
    for f in findings:
        assert f.line >= 1 and f.rule and f.severity in ("error", "warning")
    after = {p: p.read_bytes() for p in store.root.rglob("*") if p.is_file() and p.name != "fuzz.md"}
    assert after == before
    assert store.read_node("self/good").id == "self/good"
