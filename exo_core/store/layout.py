"""Where things live in a store folder, and which files are private.

Curated files (pack, routers, nodes, STORE.toml) may go into the store's own
git repository and are linted for leaks. Private files never are: the ledger,
the items table, the raw corpus and derived indexes (§24). Nested agent and
group stores live under ``agents/<name>/`` and ``groups/<name>/`` and share
the top store's ledger and items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PACK", "ROUTER", "LEDGER", "ITEMS", "MANIFEST", "INDEXES_DIR", "RAW_DIR", "STATE_DIR", "NESTED_DIRS",
    "RESERVED_DIRS", "SQLITE_FILES", "is_private", "domain_dirs", "node_files", "nested_store_dirs",
    "curated_files", "NESTED_NAME"
]

PACK = "pack.md"
ROUTER = "INDEX.md"
LEDGER = "ledger.sqlite"
ITEMS = "items.sqlite"
MANIFEST = "MANIFEST.json"
INDEXES_DIR = "indexes"
RAW_DIR = "raw"
STATE_DIR = ".exo"
NESTED_DIRS = {"agents": "agent", "groups": "group"}
RESERVED_DIRS = frozenset({INDEXES_DIR, RAW_DIR, STATE_DIR, *NESTED_DIRS})
SQLITE_FILES = (LEDGER, ITEMS)
_SQLITE_SIDE = ("-wal", "-shm", "-journal")
NESTED_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def is_private(rel: Path) -> bool:
    """True for files that are never curated: databases, raw corpus, indexes, state, git."""
    parts = rel.parts
    if not parts:
        return False
    first = parts[0]
    if first in (INDEXES_DIR, RAW_DIR, STATE_DIR, ".git") or first == MANIFEST:
        return True
    name = parts[-1]
    return any(name == db or any(name == db + side for side in _SQLITE_SIDE) for db in SQLITE_FILES)


def domain_dirs(root: Path) -> list[Path]:
    """Top-level domain folders (not reserved, not hidden), sorted by name."""
    try:
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return []
    return [p for p in entries if p.is_dir() and not p.name.startswith(".") and p.name not in RESERVED_DIRS]


def node_files(root: Path) -> list[Path]:
    """Every node file in the store's own domains (not nested stores), sorted."""
    found = []
    for domain in domain_dirs(root):
        for path in sorted(domain.rglob("*.md")):
            if path.name == ROUTER or any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            found.append(path)
    return found


def nested_store_dirs(root: Path) -> list[tuple[str, Path]]:
    """``(kind, folder)`` for each nested agent or group store directly under ``root``."""
    found = []
    for folder, kind in NESTED_DIRS.items():
        base = root / folder
        if base.is_dir():
            found.extend((kind, p) for p in sorted(base.iterdir()) if p.is_dir() and not p.name.startswith("."))
    return found


def curated_files(root: Path) -> Iterator[Path]:
    """Every non-private, non-hidden file under ``root`` (nested stores included), sorted."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and not is_private(rel) and not _inside_private_nested(rel):
            yield path


def _inside_private_nested(rel: Path) -> bool:
    # agents/<name>/indexes/... and the like are private in the nested store too.
    parts = rel.parts
    if len(parts) >= 3 and parts[0] in NESTED_DIRS:
        return is_private(Path(*parts[2:]))
    return False
