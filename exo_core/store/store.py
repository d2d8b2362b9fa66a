"""A store folder opened for reading and curated writes.

:meth:`Store.open` reads ``STORE.toml``, refuses a format newer than this
code, migrates an older one (finishing any migration a crash interrupted), and
returns a :class:`Store`. Nested agent and group stores are opened through
their parent so they know the shared ledger and items and their own scope.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from exo_core.atomic import atomic_write_text, fsync_dir, fsync_tree
from exo_core.errors import ConflictError, NotFoundError, UsageError
from exo_core.private_files import private_dir, privatize_tree
from exo_core.store import layout
from exo_core.store.errors import StoreFormatError
from exo_core.store.ledger_bridge import create_ledger
from exo_core.store.load_rules import Router, parse_router
from exo_core.store.node import NODE_ID, Link, Node, parse_node, render_node
from exo_core.store.store_toml import CURRENT_FORMAT, StoreConfig, new_store_id, read_config, write_config

__all__ = ["Store", "init_store", "new_store_id", "PERSON_SCOPE", "template_path"]

PERSON_SCOPE = "person"


def template_path() -> Path:
    """The ``store_template/`` folder, as shipped inside the package.

    ``exo_core/store/template`` is a link to the repository's top-level
    ``store_template/`` in a checkout (and an editable install); a built wheel
    holds the files themselves there (package data), so both find it here.
    """
    return Path(__file__).parent / "template"


@dataclass(frozen=True, slots=True)
class Store:
    """An open store. ``scope`` is ``person`` for a top store, ``agent:<name>``/``group:<name>`` nested."""

    root: Path
    config: StoreConfig
    scope: str = PERSON_SCOPE
    parent: Store | None = None

    @classmethod
    def open(cls, root: Path | str) -> Store:
        """Open the store at ``root``, migrating an older format first (finishing one a crash interrupted).

        Raises :class:`StoreVersionError` for a format newer than this code,
        :class:`StoreFormatError` for a missing or malformed STORE.toml.
        """
        root = Path(root).resolve()
        if not root.is_dir():
            raise NotFoundError(f"{root}: no such store folder; run 'exo init' or pass --store DIR")
        from exo_core.store.migrate import migrate_store  # migrate imports Store's pieces

        migrate_store(root)  # finishes a migration a crash interrupted, or runs one; refuses a newer format
        config = read_config(root)
        if config.kind != "person":
            raise UsageError(f"{root} is a nested {config.kind} store; open its person store and use Store.nested()")
        return cls(root, config)

    # -- where things are -------------------------------------------------
    @property
    def top(self) -> Store:
        """The person store at the top of the nesting (itself when not nested)."""
        return self if self.parent is None else self.parent.top

    @property
    def ledger_path(self) -> Path:
        """The ledger shared by this store and every store nested in its top store."""
        return self.top.root / layout.LEDGER

    @property
    def items_path(self) -> Path:
        """The items table shared like the ledger."""
        return self.top.root / layout.ITEMS

    # -- nesting ----------------------------------------------------------
    def nested(self) -> list[Store]:
        """The agent and group stores directly inside this one."""
        found = []
        for kind, folder in layout.nested_store_dirs(self.root):
            config = read_config(folder)
            if config.kind != kind:
                raise StoreFormatError(
                    f'kind {config.kind!r} but it sits under {folder.parent.name}/; set kind = "{kind}"',
                    path=folder / "STORE.toml",
                    rule="nested-kind",
                )
            found.append(Store(folder, config, f"{kind}:{folder.name}", self))
        return found

    def add_nested(self, kind: str, name: str) -> Store:
        """Create ``agents/<name>`` or ``groups/<name>`` with its own pack and router."""
        if kind not in ("agent", "group"):
            raise UsageError(f"nested stores are 'agent' or 'group', not {kind!r}")
        if not layout.NESTED_NAME.fullmatch(name):
            raise UsageError(f"nested store name {name!r} must be lower case letters, digits and '-'")
        folder = self.root / f"{kind}s" / name
        if folder.exists():
            raise ConflictError(f"{folder} already exists")
        private_dir(folder.parent)
        private_dir(folder, parents=False)
        config = StoreConfig(format=CURRENT_FORMAT, kind=kind, store_id=new_store_id(), created=_today())
        write_config(folder, config)
        atomic_write_text(
            folder / layout.PACK,
            f"# {kind.title()} pack: {name}\n\nWhat this {kind} is for, in one "
            "page. It shares the person's ledger and items and links to the person's facts instead of "
            "copying them.\n",
        )
        atomic_write_text(folder / layout.ROUTER, f"# {kind.title()} index: {name}\n\n## Load rules\n")
        fsync_dir(folder.parent)
        return Store(folder, config, f"{kind}:{name}", self)

    # -- curated files ----------------------------------------------------
    def pack_text(self) -> str:
        """The pack page, loaded on every request."""
        return _read(self.root / layout.PACK, "missing; copy it from store_template/")

    def router(self, domain: str | None = None) -> Router:
        """The root router, or a domain's router."""
        path = self.root / (f"{domain}/{layout.ROUTER}" if domain else layout.ROUTER)
        return parse_router(_read(path, "missing; every store and domain needs an INDEX.md"), path=path)

    def node_path(self, node_id: str) -> Path:
        """Where the node with ``node_id`` lives in this store."""
        if not NODE_ID.fullmatch(node_id):
            raise UsageError(f"{node_id!r} is not a node id like 'domain/short-name'")
        return self.root / f"{node_id}.md"

    def read_node(self, node_id: str) -> Node:
        """Read one node of this store; :class:`NotFoundError` when absent."""
        path = self.node_path(node_id)
        return parse_node(_read(path, f"no node {node_id!r}"), path=path)

    def nodes(self) -> list[Node]:
        """Every node of this store (not nested ones); a malformed file raises naming it."""
        return [parse_node(p.read_text(encoding="utf-8"), path=p) for p in layout.node_files(self.root)]

    def visible_nodes(self) -> list[Node]:
        """The nodes this scope may see: its own, plus its ancestors' non-private nodes.

        Private nodes never reach an agent or group scope (docs/store.md).
        """
        own = self.nodes()
        if self.parent is None:
            return own
        seen = {n.id for n in own}
        return own + [n for n in self.parent.visible_nodes() if not n.private and n.id not in seen]

    def write_node(self, node: Node) -> Path:
        """Write ``node`` atomically at the path its id names."""
        path = self.node_path(node.id)
        if node.domain != node.id.split("/", 1)[0]:
            raise UsageError(f"node {node.id!r} has domain {node.domain!r}; the domain is the id's first part")
        self.ensure_domain(node.domain)
        private_dir(path.parent)
        text = render_node(node)
        parse_node(text, path=path)  # never write what we could not read back
        atomic_write_text(path, text)
        return path

    def ensure_domain(self, domain: str, *, about: str = "") -> None:
        """Create ``<domain>/INDEX.md`` and link it from the root router, if missing.

        ``about`` says what the domain holds, after its link in the root router (``- [[d/INDEX]]: about``).
        """
        folder = self.root / domain
        if domain in layout.RESERVED_DIRS or domain.startswith("."):
            raise UsageError(f"{domain!r} is a reserved folder name, not a domain")
        index = folder / layout.ROUTER
        if not index.is_file():
            private_dir(folder)
            atomic_write_text(
                index, f"# {domain.title()}\n\nNodes of the {domain} domain, one belief a file.\n\n## Load rules\n\n"
            )
        root_index = self.root / layout.ROUTER
        text = root_index.read_text(encoding="utf-8") if root_index.is_file() else "# Index\n"
        if f"[[{domain}/INDEX]]" in text:
            return
        entry = f"- [[{domain}/INDEX]]" + (f": {about}" if about else "")
        lines = text.split("\n")
        heading = next((i for i, line in enumerate(lines) if line.strip().lower() == "## domains"), None)
        if heading is None:
            lines = lines[:1] + ["", "## Domains", "", entry] + lines[1:]
        else:
            at = heading + 1
            while at < len(lines) and (not lines[at].strip() or lines[at].lstrip().startswith("- ")):
                at += 1
            while at > heading + 1 and not lines[at - 1].strip():
                at -= 1
            lines.insert(at, entry)
        atomic_write_text(root_index, "\n".join(lines))

    def supersede(self, old_id: str, new: Node, *, on: str | None = None) -> Path:
        """Replace a belief without deleting it: the old one gets ``valid_until``,
        the new one a ``supersedes`` link to it. The new node is written first so
        a crash between the two writes leaves both beliefs and the link."""
        old = self.read_node(old_id)
        day = on or _today()
        link = Link("supersedes", old_id)
        if link not in new.links:
            new = dataclasses.replace(new, links=new.links + (link,))
        path = self.write_node(new)
        if old.valid_until is None or old.valid_until > day:
            self.write_node(dataclasses.replace(old, valid_until=max(day, old.valid_from)))
        return path


def _read(path: Path, missing: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: {missing}") from exc


def _today() -> str:
    return _dt.date.today().isoformat()


def init_store(dest: Path | str, *, owner_key_ids: list[str], name: str = "") -> Store:
    """Create a new person store at ``dest`` from ``store_template/`` and fill STORE.toml.

    ``dest`` must not exist or be an empty folder. The copy is made in a
    sibling temp folder and renamed into place, so a crash leaves no
    half-made store. The empty ``ledger.sqlite`` is created too, its ledger id
    equal to the new store id. Returns the opened store. (Agent and group
    stores are made with :meth:`Store.add_nested`.)
    """
    dest = Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConflictError(f"{dest} exists and is not empty; choose another folder or move it away")
    source = template_path()
    if not (source / "STORE.toml").is_file():
        raise NotFoundError(f"{source}: store template missing (reinstall Exo)")
    staging = dest.with_name(f".{dest.name}.init-{secrets.token_hex(4)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns("__pycache__", ".DS_Store"))
    config = StoreConfig(read_config(staging).format, "person", new_store_id(), tuple(owner_key_ids), _today(), name)
    write_config(staging, config)
    create_ledger(staging, config.store_id)
    privatize_tree(staging)  # the template's files are 0644 in the package; a store is private
    fsync_tree(staging)
    staging.rename(dest)  # POSIX rename replaces an empty folder at dest
    fsync_dir(dest.parent)
    return Store.open(dest)
