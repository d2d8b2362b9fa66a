"""Belief nodes: one Markdown file per belief, with required frontmatter (docs/store.md).

A node lives at ``<domain>/<name>.md`` and its id is ``<domain>/<name>``; the
id in the frontmatter must match the path, so a moved file is caught by lint
rather than silently renamed. Links are typed and written as
``- <type> [[<target id>]]`` so Obsidian draws them in its graph. A replaced
belief is never deleted: it gets ``valid_until`` and its successor carries a
``supersedes`` link to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.store.errors import StoreFormatError
from exo_core.store.frontmatter import FrontValue, dump_frontmatter, parse_document

__all__ = [
    "Node",
    "Link",
    "NODE_TYPES",
    "LINK_TYPES",
    "CONFIDENCE",
    "STABILITY",
    "REQUIRED_KEYS",
    "OPTIONAL_KEYS",
    "parse_node",
    "render_node",
    "node_id_for",
    "NODE_ID",
    "PIN_ONLY",
]

NODE_TYPES = frozenset(
    {"trait", "value", "fact", "preference", "rule", "episode", "entity", "procedure", "question", "pattern", "tension"}
)
LINK_TYPES = frozenset(
    {
        "part-of",
        "explains",
        "evidence-for",
        "contradicts",
        "supersedes",
        "applies-to",
        "instance-of",
        "see-also",
        "derived-from",
    }
)
CONFIDENCE = ("high", "medium", "low")
STABILITY = ("core", "durable", "volatile")
REQUIRED_KEYS = (
    "id",
    "title",
    "type",
    "domain",
    "summary",
    "load_when",
    "confidence",
    "stability",
    "valid_from",
    "sources",
    "links",
)
OPTIONAL_KEYS = ("valid_until", "tags", "private", "aliases")
# The tag of a node recalled only when a load rule pins it, never by similarity (docs/retrieval.md, "Pinned only").
PIN_ONLY = "pin-only"
_LIST_KEYS = frozenset({"sources", "links", "tags", "aliases"})
_CHOICES = {"type": tuple(sorted(NODE_TYPES)), "confidence": CONFIDENCE, "stability": STABILITY}

NODE_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}(/[a-z0-9][a-z0-9-]{0,62}){1,3}")
_DATE = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")
_LINK = re.compile(r"(?P<type>[a-z-]+) \[\[(?P<target>[^\[\]|#]+)\]\]")


@dataclass(frozen=True, slots=True)
class Link:
    """A typed link from one node to another node (or item) id."""

    type: str
    target: str

    def render(self) -> str:
        """The frontmatter list item: ``<type> [[<target>]]``."""
        return f"{self.type} [[{self.target}]]"


@dataclass(frozen=True, slots=True)
class Node:
    """One belief. Dates are ``YYYY-MM-DD`` text; ``private`` nodes never reach agent scopes."""

    id: str
    title: str
    type: str
    domain: str
    summary: str
    load_when: str
    confidence: str
    stability: str
    valid_from: str
    sources: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    valid_until: str | None = None
    tags: tuple[str, ...] = ()
    private: bool = False
    aliases: tuple[str, ...] = ()
    body: str = ""
    path: Path | None = field(default=None, compare=False)
    key_lines: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def line_of(self, key: str) -> int | None:
        """The 1-based line where ``key`` was read, if known."""
        return dict(self.key_lines).get(key)

    def is_current(self, today: str) -> bool:
        """True when the belief holds on ``today`` (``YYYY-MM-DD``)."""
        return self.valid_from <= today and (self.valid_until is None or today < self.valid_until)


def node_id_for(store_root: Path, path: Path) -> str:
    """The id a node file at ``path`` must carry: its path under the store, without ``.md``."""
    return path.relative_to(store_root).with_suffix("").as_posix()


def parse_node(text: str, *, path: Path | str | None = None) -> Node:
    """Parse and validate a node file; every problem names ``path`` and the line.

    Raises :class:`StoreFormatError` with ``rule`` set to one of
    ``frontmatter``, ``missing-key``, ``mistyped-key``, ``unknown-key``.
    """
    doc = parse_document(text, path=path)
    values, lines = doc.values, doc.lines

    def bad(key: str, message: str, rule: str = "mistyped-key") -> StoreFormatError:
        return StoreFormatError(message, path=path, line=lines.get(key, 1), rule=rule)

    for key in REQUIRED_KEYS:
        if key not in values:
            raise bad(key, f"missing required key {key!r}; add '{key}:' to the frontmatter", "missing-key")
    for key in values:
        if key not in REQUIRED_KEYS and key not in OPTIONAL_KEYS:
            raise bad(key, f"unknown key {key!r}; allowed: {', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}", "unknown-key")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _LIST_KEYS:
        value = values.get(key)
        if value is not None and not isinstance(value, list):
            raise bad(key, f"{key!r} must be a list, e.g. '{key}: []'")
        lists[key] = tuple(value or ())
    text_of: dict[str, str] = {}
    for key in REQUIRED_KEYS:
        if key in _LIST_KEYS:
            continue
        value = "" if key == "load_when" and values[key] is None else values[key]
        if not isinstance(value, str):
            raise bad(key, f"{key!r} must be text, not {'a list' if isinstance(value, list) else 'empty'}")
        text_of[key] = value
    if not NODE_ID.fullmatch(text_of["id"]):
        raise bad("id", f"id {text_of['id']!r} must look like 'domain/short-name' (lower case, digits, '-')")
    for key, allowed in _CHOICES.items():
        if text_of[key] not in allowed:
            raise bad(key, f"{key} {text_of[key]!r} is not one of {', '.join(allowed)}")
    if not _DATE.fullmatch(text_of["valid_from"]):
        raise bad("valid_from", "valid_from must be a date YYYY-MM-DD")
    if not text_of["title"].strip() or not text_of["summary"].strip():
        raise bad("title" if not text_of["title"].strip() else "summary", "title and summary must not be blank")
    valid_until = values.get("valid_until")
    if valid_until is not None:
        if not isinstance(valid_until, str) or not _DATE.fullmatch(valid_until):
            raise bad("valid_until", "valid_until must be a date YYYY-MM-DD")
        if valid_until < text_of["valid_from"]:
            raise bad("valid_until", "valid_until is before valid_from")
    private_raw = values.get("private")
    if private_raw not in (None, "true", "false"):
        raise bad("private", "private must be true or false")
    links: list[Link] = []
    for item in lists["links"]:
        match = _LINK.fullmatch(item)
        if not match:
            raise bad("links", f"link {item!r} must look like 'see-also [[domain/name]]'")
        if match["type"] not in LINK_TYPES:
            raise bad("links", f"link type {match['type']!r} is not one of {', '.join(sorted(LINK_TYPES))}")
        links.append(Link(match["type"], match["target"].strip()))
    return Node(
        **text_of,
        sources=lists["sources"],
        links=tuple(links),
        valid_until=valid_until if isinstance(valid_until, str) else None,
        tags=lists["tags"],
        private=private_raw == "true",
        aliases=lists["aliases"],
        body=doc.body,
        path=Path(path) if path is not None else None,
        key_lines=tuple(lines.items()),
    )


def render_node(node: Node) -> str:
    """The node as file text; :func:`parse_node` reads it back equal."""
    values: dict[str, FrontValue | bool] = {key: getattr(node, key) for key in REQUIRED_KEYS[:9]}
    if node.valid_until is not None:
        values["valid_until"] = node.valid_until
    values.update(sources=list(node.sources), links=[link.render() for link in node.links])
    values.update({key: list(getattr(node, key)) for key in ("tags", "aliases") if getattr(node, key)})
    if node.private:
        values["private"] = True
    return dump_frontmatter(values) + node.body
