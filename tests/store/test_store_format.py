"""Frontmatter subset, node schema, STORE.toml: round trips, fuzzing, clear errors."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exo_core.store.errors import StoreFormatError
from exo_core.store.frontmatter import dump_frontmatter, parse_document
from exo_core.store.load_rules import parse_router
from exo_core.store.node import Link, Node, parse_node, render_node
from exo_core.store.store_toml import StoreConfig, parse_config

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
VALUES = st.one_of(TEXT, st.lists(TEXT, max_size=4), st.none())


@given(st.dictionaries(KEYS, VALUES, max_size=8), TEXT)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_frontmatter_round_trip(values: dict, body: str) -> None:
    """Whatever we write, we read back unchanged (text with quotes, colons, newlines, unicode)."""
    text = dump_frontmatter(values) + body
    doc = parse_document(text, path="x.md")
    # An empty string is written quoted; a None stays null; lists stay lists.
    assert doc.values == values
    assert doc.body == body


@given(st.text(max_size=300))
@settings(max_examples=500)
def test_frontmatter_fuzz_never_crashes(text: str) -> None:
    """Random input parses or raises a StoreFormatError naming the file and a line."""
    try:
        parse_document(text, path="notes/fuzz.md")
    except StoreFormatError as exc:
        assert str(exc).startswith("notes/fuzz.md:")
        assert exc.line is not None and exc.line >= 1


LINE_CHARS = st.sampled_from(list("ab:-[]{}#'\" \t,|>&*!\\") + ["\n", "---", "key: ", "  - ", "x: [a, b]"])


@given(st.lists(LINE_CHARS, max_size=60).map("".join))
@settings(max_examples=500)
def test_frontmatter_fuzz_structured(fragment: str) -> None:
    """YAML-ish noise inside a frontmatter block: parsed or a located error."""
    text = "---\n" + fragment + "\n---\nbody"
    try:
        parse_document(text, path="f.md")
    except StoreFormatError as exc:
        assert exc.path == "f.md" and exc.line is not None


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("no frontmatter", 1, "must start with"),
        ("---\nid: a\n", 3, "no closing"),
        ("---\nid: a\nid: b\n---\n", 3, "duplicate key"),
        ("---\nid: a\n  nested: b\n---\n", 3, "indentation"),
        ("---\nid: {a: b}\n---\n", 2, "not supported"),
        ("---\nid: a: b\n---\n", 2, "': '"),
        ('---\nid: "open\n---\n', 2, "unterminated"),
        ("---\nid: [a, b\n---\n", 2, "must end with"),
        ("---\nid: &anchor a\n---\n", 2, "not supported"),
        ("---\n- x\n---\n", 2, "must follow"),
        ("---\nBad: x\n---\n", 2, "lower-case key"),
        ('---\nid: "\\q"\n---\n', 2, "bad escape"),
    ],
)
def test_frontmatter_errors_name_line(text: str, line: int, needle: str) -> None:
    with pytest.raises(StoreFormatError) as info:
        parse_document(text, path="n.md")
    assert info.value.line == line
    assert needle in str(info.value)
    assert str(info.value).startswith(f"n.md:{line}:")


def _node(**over: object) -> Node:
    base: dict[str, object] = dict(
        id="taste/short-replies",
        title="Short replies",
        type="preference",
        domain="taste",
        summary="Prefers short replies that lead with the result.",
        load_when="writing a reply | draft",
        confidence="high",
        stability="durable",
        valid_from="2025-01-31",
        sources=("person",),
        links=(Link("see-also", "rules/INDEX"),),
        body="\n# Short replies\n\nLead with the result.\n",
    )
    base.update(over)
    return Node(**base)  # type: ignore[arg-type]


def test_node_round_trip() -> None:
    node = _node(private=True, valid_until="2026-01-01", tags=("writing", "tone: dry"))
    assert parse_node(render_node(node), path="taste/short-replies.md") == node


@given(
    title=TEXT.filter(lambda t: t.strip()),
    summary=TEXT.filter(lambda t: t.strip()),
    load_when=TEXT,
    sources=st.lists(TEXT, max_size=3),
)
@settings(max_examples=200)
def test_node_round_trip_any_text(title: str, summary: str, load_when: str, sources: list[str]) -> None:
    node = _node(title=title, summary=summary, load_when=load_when, sources=tuple(sources))
    assert parse_node(render_node(node), path="x.md") == node


@pytest.mark.parametrize(
    ("edit", "rule", "key"),
    [
        (lambda t: t.replace("type: preference\n", ""), "missing-key", None),
        (lambda t: t.replace("type: preference", "type: opinion"), "mistyped-key", "type"),
        (lambda t: t.replace("confidence: high", "confidence: certain"), "mistyped-key", "confidence"),
        (lambda t: t.replace("valid_from: 2025-01-31", "valid_from: 31/01/2025"), "mistyped-key", "valid_from"),
        (lambda t: t.replace("see-also [[rules/INDEX]]", "likes [[rules/INDEX]]"), "mistyped-key", "links"),
        (lambda t: t.replace("see-also [[rules/INDEX]]", "rules/INDEX"), "mistyped-key", "links"),
        (lambda t: t.replace("sources:\n  - person", "sources: person"), "mistyped-key", "sources"),
        (lambda t: t.replace("title: Short replies", "title: [a, b]"), "mistyped-key", "title"),
        (lambda t: t.replace("id: taste/short-replies", "id: Taste Short"), "mistyped-key", "id"),
        (lambda t: t.replace("domain: taste\n", "domain: taste\nmood: good\n"), "unknown-key", "mood"),
    ],
)
def test_node_errors(edit, rule: str, key: str | None) -> None:  # type: ignore[no-untyped-def]
    text = edit(render_node(_node()))
    with pytest.raises(StoreFormatError) as info:
        parse_node(text, path="taste/short-replies.md")
    assert info.value.rule == rule
    if key is not None:
        expected = next(i for i, l in enumerate(text.split("\n"), 1) if l.startswith(f"{key}:"))
        assert info.value.line == expected


@given(st.binary(max_size=400))
@settings(max_examples=300)
def test_node_fuzz_bytes(data: bytes) -> None:
    """Arbitrary bytes as a node file: parsed, or a StoreFormatError/UnicodeDecodeError at the boundary."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # readers decode first and report not-utf8 with its line (see lint tests)
    try:
        parse_node("---\n" + text, path="d/n.md")
    except StoreFormatError as exc:
        assert str(exc).startswith("d/n.md")


def test_config_round_trip_and_errors() -> None:
    config = StoreConfig(2, "person", "st_" + "a" * 32, ("ed25519:" + "b" * 64,), "2025-01-01", 'a "quoted" name\\')
    assert parse_config(config.to_toml()) == config
    with pytest.raises(StoreFormatError) as info:
        parse_config('format = 2\nkind = "robot"\n', path="STORE.toml")
    assert info.value.line == 2 and "kind" in str(info.value)
    with pytest.raises(StoreFormatError) as info:
        parse_config("format = 2\nkind = \n", path="STORE.toml")
    assert info.value.line == 2
    with pytest.raises(StoreFormatError) as info:
        parse_config('format = 2\nkind = "person"\ncolour = "red"\n', path="STORE.toml")
    assert info.value.line == 3


@given(st.text(max_size=200))
@settings(max_examples=400)
def test_config_fuzz(text: str) -> None:
    try:
        parse_config(text, path="S/STORE.toml")
    except StoreFormatError as exc:
        assert str(exc).startswith("S/STORE.toml")


@given(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=50),
    st.lists(st.text(max_size=10).filter(lambda s: s != "" and "\ud800" > s[:1] or True), max_size=3),
)
@settings(max_examples=200)
def test_toml_writer_round_trip(name: str, keys: list[str]) -> None:
    keys = [k for k in keys if k and all(not (0xD800 <= ord(c) <= 0xDFFF) for c in k)]
    config = StoreConfig(2, "agent", "", tuple(keys), "", name)
    assert parse_config(config.to_toml()) == config


def test_parse_node_reads_template_style_file(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_text(render_node(_node()).replace("\n", "\r\n"), encoding="utf-8")
    node = parse_node(path.read_text(encoding="utf-8"), path=path)
    assert node.title == "Short replies"
    assert set(string.ascii_lowercase) >= set("ab")


def test_router_skips_html_comments_and_fenced_code_keeping_line_numbers() -> None:
    text = (
        "# Taste\n\n## Load rules\n\n<!-- an example:\n- draft -> [[taste/hidden]] -->\n"
        "- commit message | git commit -> [[taste/commit-style]] <!-- why -->\n"
        "```\n[[taste/in-code]]\n```\n- tone -> oops\n"
    )
    with pytest.raises(StoreFormatError) as info:
        parse_router(text, path="taste/INDEX.md")
    assert info.value.line == 11 and info.value.rule == "router"
    router = parse_router(text.replace("- tone -> oops\n", ""))
    assert [(r.trigger, r.targets, r.line) for r in router.rules] == [
        ("commit message | git commit", ("taste/commit-style",), 7)
    ]
    assert router.links == (("taste/commit-style", 7),)
