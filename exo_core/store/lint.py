"""``exo store lint``: every problem in a store, each naming file, line and rule.

Errors make a store unfit to use (a node that does not parse, a dangling
link, a leaked secret); warnings are things a careful person fixes (a copy of
a node in the pack, a restated count, a superseded belief still marked
valid). The blank ``store_template/`` lints with zero of either.

Rules: store-toml, missing-store-toml, old-format, newer-format, missing-pack,
missing-router, frontmatter, missing-key, mistyped-key, unknown-key,
id-mismatch, domain-mismatch, dangling-link, private-link, router,
unrouted-domain, superseded-still-valid, pack-copy, restated-count,
duplicate-fact, nested-kind, not-utf8, leak-<kind>.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.store import layout
from exo_core.store.errors import StoreFormatError
from exo_core.store.leaks import find_leaks
from exo_core.store.load_rules import parse_router, wikilinks
from exo_core.store.node import Node, node_id_for, parse_node
from exo_core.store.store_toml import CURRENT_FORMAT, StoreConfig, read_config

__all__ = ["Finding", "LintReport", "lint_store"]

_TEXT_SUFFIXES = frozenset({".md", ".toml", ".txt", ".json", ".csv", ".yaml", ".yml"})
_COUNT = re.compile(
    r"\b\d+\s+(?:times|corrections|entries|sessions|items|edits|drafts|bookmarks|notes|verdicts|rejections)\b",
    re.IGNORECASE,
)
_ITEM_ID = re.compile(r"itm_[0-9a-f]{24}")
_MIN_COPY = 30


@dataclass(frozen=True, slots=True)
class Finding:
    """One lint finding; ``path`` is relative to the linted folder."""

    path: str
    line: int
    rule: str
    severity: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.severity} [{self.rule}] {self.message}"


@dataclass(frozen=True, slots=True)
class LintReport:
    """All findings for one store, sorted by file and line."""

    root: Path
    findings: tuple[Finding, ...] = field(default=())

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings that make the store unfit to use."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Findings a careful person fixes."""
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def clean(self) -> bool:
        """True when there is nothing at all to report."""
        return not self.findings


class _Linter:
    def __init__(self, top: Path) -> None:
        self.top = top
        self.findings: list[Finding] = []
        self._item_ids: set[str] | None = None

    def add(self, path: Path, line: int | None, rule: str, severity: str, message: str) -> None:
        # Every linted path is under the top store (lint only walks it), so it has a relative name.
        self.findings.append(Finding(path.relative_to(self.top).as_posix(), line or 1, rule, severity, message))

    def from_error(self, exc: StoreFormatError, fallback: Path) -> None:
        self.add(Path(exc.path or fallback), exc.line, exc.rule, "error", exc.detail)

    def exists(self, target: str, targets: set[str]) -> bool:
        """A link target is a node, a router or the pack (``targets``), or an item in items.sqlite."""
        if target in targets:
            return True
        if not _ITEM_ID.fullmatch(target):
            return False
        if self._item_ids is None:
            self._item_ids = set()
            # Missing or unreadable (read-only open fails on a missing file): verify reports it, and item links
            # then dangle, which is the truth.
            with (
                contextlib.suppress(sqlite3.Error),
                contextlib.closing(sqlite3.connect(f"file:{self.top / layout.ITEMS}?mode=ro", uri=True)) as conn,
            ):
                self._item_ids = {row[0] for row in conn.execute("SELECT id FROM items")}
        return target in self._item_ids

    def read_text(self, path: Path) -> str | None:
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            line = path.read_bytes()[: exc.start].count(b"\n") + 1
            self.add(path, line, "not-utf8", "error", "not UTF-8 text; re-save the file as UTF-8")
        except OSError as exc:
            self.add(path, None, "unreadable", "error", f"cannot read ({exc.strerror})")
        return None

    def lint(
        self, root: Path, expected_kind: str, parent_nodes: dict[str, Node], hidden: frozenset[str] = frozenset()
    ) -> None:
        if self.lint_config(root, expected_kind) is None and expected_kind == "person":
            return  # no usable STORE.toml: nothing else to trust
        nodes: dict[str, Node] = {}
        for path in layout.node_files(root):
            text = self.read_text(path)
            if text is None:
                continue
            try:
                node = parse_node(text, path=path)
            except StoreFormatError as exc:
                self.from_error(exc, path)
                continue
            expected = node_id_for(root, path)
            if node.id != expected:
                self.add(
                    path,
                    node.line_of("id"),
                    "id-mismatch",
                    "error",
                    f"id {node.id!r} does not match its path; set 'id: {expected}' or move the file",
                )
                continue
            if node.domain != expected.split("/", 1)[0]:
                self.add(
                    path,
                    node.line_of("domain"),
                    "domain-mismatch",
                    "error",
                    f"domain {node.domain!r} but the file is in {expected.split('/', 1)[0]}/",
                )
            nodes[node.id] = node
        visible = {**parent_nodes, **nodes}
        targets = set(visible) | {"pack", "INDEX"} | {f"{d.name}/INDEX" for d in layout.domain_dirs(root)}
        for node in nodes.values():
            self.lint_node(node, visible, targets, parent_nodes, nodes, hidden)
        self.lint_hot_path(root, nodes, targets)
        for kind, folder in layout.nested_store_dirs(root):
            # Private nodes are invisible to nested scopes, so a link to one dangles there.
            shared = {nid: n for nid, n in visible.items() if not n.private}
            self.lint(folder, kind, shared, frozenset(hidden | {nid for nid, n in visible.items() if n.private}))

    def lint_config(self, root: Path, expected_kind: str) -> StoreConfig | None:
        try:
            config = read_config(root)
        except StoreFormatError as exc:
            self.from_error(exc, root / "STORE.toml")
            return None
        toml = root / "STORE.toml"
        if config.format > CURRENT_FORMAT:
            self.add(
                toml,
                1,
                "newer-format",
                "error",
                f"format {config.format} is newer than this Exo ({CURRENT_FORMAT}); upgrade Exo",
            )
        elif config.format < CURRENT_FORMAT:
            self.add(
                toml,
                1,
                "old-format",
                "warning",
                f"format {config.format}; run 'exo store verify' or any exo store command to migrate it",
            )
        if config.kind != expected_kind:
            self.add(
                toml, 1, "nested-kind", "error", f"kind {config.kind!r} but this folder holds a {expected_kind} store"
            )
        return config

    def lint_node(
        self,
        node: Node,
        visible: dict[str, Node],
        targets: set[str],
        parent_nodes: dict[str, Node],
        own: dict[str, Node],
        hidden: frozenset[str],
    ) -> None:
        assert node.path is not None
        line = node.line_of("links")
        for link in node.links:
            target = visible.get(link.target)
            if target is None and link.target in hidden:
                self.add(
                    node.path,
                    line,
                    "private-link",
                    "error",
                    f"{link.type} link to {link.target!r}, a private node this scope may not see; remove it",
                )
                continue
            if target is None and not self.exists(link.target, targets):
                self.add(
                    node.path,
                    line,
                    "dangling-link",
                    "error",
                    f"{link.type} link to {link.target!r}, which does not exist in this store",
                )
                continue
            # A retired node's supersedes link is history: rejecting a learned lesson retires its node
            # and brings the belief it superseded back (docs/learning.md), both rightly valid again.
            replacing = node.valid_until is None
            if link.type == "supersedes" and replacing and target is not None and target.valid_until is None:
                self.add(
                    node.path,
                    line,
                    "superseded-still-valid",
                    "warning",
                    f"supersedes {link.target!r}, which has no valid_until; give it one",
                )
        for dangling, number in wikilinks(node.body):
            if self.exists(dangling, targets):
                continue
            # The body is the file's tail, so the lines before it are the file's newlines less the body's.
            before_body = node.path.read_text(encoding="utf-8").count("\n") - node.body.count("\n")
            self.add(
                node.path,
                before_body + number,
                "dangling-link",
                "error",
                f"[[{dangling}]] does not exist in this store",
            )
        for parent in parent_nodes.values():
            if parent.summary.strip() == node.summary.strip() and parent.id not in own:
                self.add(
                    node.path,
                    node.line_of("summary"),
                    "duplicate-fact",
                    "warning",
                    f"same summary as the person's {parent.id!r}; link to it instead (one fact, one home)",
                )

    def lint_hot_path(self, root: Path, nodes: dict[str, Node], targets: set[str]) -> None:
        pack, router, domains = root / layout.PACK, root / layout.ROUTER, layout.domain_dirs(root)
        routers = [router] + [d / layout.ROUTER for d in domains]
        root_links: set[str] = set()
        missing = {
            pack: ("missing-pack", "missing; copy pack.md from store_template/"),
            router: ("missing-router", "missing; copy INDEX.md from store_template/"),
        }
        for path in [pack] + routers:
            if not path.is_file():
                rule, message = missing.get(
                    path,
                    (
                        "missing-router",
                        f"domain {path.parent.name}/ has no INDEX.md; add one with a '## Load rules' heading",
                    ),
                )
                self.add(path, 1, rule, "error", message)
                continue
            text = self.read_text(path)
            if text is None:
                continue
            if path in routers:
                try:
                    parsed = parse_router(text, path=path)
                except StoreFormatError as exc:
                    self.from_error(exc, path)
                else:
                    for load_rule in parsed.rules:
                        for pinned in load_rule.targets:
                            if pinned in targets:
                                continue
                            self.add(
                                path,
                                load_rule.line,
                                "dangling-link",
                                "error",
                                f"load rule pins [[{pinned}]], which does not exist",
                            )
            for target, number in wikilinks(text):
                if path == router:
                    root_links.add(target)
                if not self.exists(target, targets):
                    self.add(path, number, "dangling-link", "error", f"[[{target}]] does not exist in this store")
            self.lint_copies(path, text, nodes)
        for domain in domains:
            if router.is_file() and f"{domain.name}/INDEX" not in root_links:
                self.add(
                    router,
                    1,
                    "unrouted-domain",
                    "warning",
                    f"domain {domain.name}/ is not linked; add '- [[{domain.name}/INDEX]]' under Domains",
                )

    def lint_copies(self, path: Path, text: str, nodes: dict[str, Node]) -> None:
        # Hot-path files hold pointers, never copies, and cite counts rather
        # than restate them (docs/store.md).
        for number, line in enumerate(text.split("\n"), start=1):
            if _COUNT.search(line) and "[[" not in line:
                self.add(
                    path,
                    number,
                    "restated-count",
                    "warning",
                    "a count written in prose drifts; link the node or data that holds it",
                )
        for node in nodes.values():
            if node.valid_until is not None:
                # A retired belief is history and never changes, so a line that says the same words
                # cannot drift from it (the learner's line for a lesson that superseded the row the
                # person reworded does exactly that).
                continue
            summary = node.summary.strip()
            if len(summary) >= _MIN_COPY and summary in text:
                self.add(
                    path,
                    text[: text.index(summary)].count("\n") + 1,
                    "pack-copy",
                    "warning",
                    f"copies the summary of {node.id!r}; link [[{node.id}]] instead",
                )

    def lint_leaks(self, root: Path) -> None:
        for path in layout.curated_files(root):
            if path.suffix.lower() not in _TEXT_SUFFIXES:
                continue
            text = self.read_text(path)
            if text is None:
                continue
            for leak in find_leaks(text):
                self.add(
                    path,
                    leak.line,
                    f"leak-{leak.kind}",
                    "error",
                    f"looks like a {leak.kind} ({leak.preview}); remove it, curated files may be shared",
                )


def lint_store(root: Path | str) -> LintReport:
    """Lint the store at ``root`` (and every nested store) without changing anything."""
    root = Path(root).resolve()
    linter = _Linter(root)
    linter.lint(root, "person", {})
    linter.lint_leaks(root)
    return LintReport(root, tuple(sorted(set(linter.findings), key=lambda f: (f.path, f.line, f.rule, f.message))))
