"""Where things live in a store folder, and which files are private.

Curated files (pack, routers, nodes, STORE.toml) may go into the store's own
git repository and are linted for leaks. Private files never are: the ledger,
the items table, the raw corpus and derived indexes (docs/security.md). Nested agent and
group stores live under ``agents/<name>/`` and ``groups/<name>/`` and share
the top store's ledger and items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PACK",
    "ROUTER",
    "LEDGER",
    "ITEMS",
    "MANIFEST",
    "INDEXES_DIR",
    "RAW_DIR",
    "STATE_DIR",
    "NESTED_DIRS",
    "RESERVED_DIRS",
    "SQLITE_FILES",
    "is_private",
    "domain_dirs",
    "node_files",
    "nested_store_dirs",
    "curated_files",
    "NESTED_NAME",
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
_PRIVATE_TOP = frozenset({INDEXES_DIR, RAW_DIR, STATE_DIR, ".git", MANIFEST})
_SQLITE_NAMES = frozenset(db + side for db in SQLITE_FILES for side in ("", "-wal", "-shm", "-journal"))
NESTED_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def is_private(rel: Path) -> bool:
    """True for files that are never curated: databases, raw corpus, indexes, state, git."""
    return bool(rel.parts) and (rel.parts[0] in _PRIVATE_TOP or rel.name in _SQLITE_NAMES)


def domain_dirs(root: Path) -> list[Path]:
    """Top-level domain folders (not reserved, not hidden), sorted by name."""
    try:
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return []
    return [p for p in entries if p.is_dir() and not p.name.startswith(".") and p.name not in RESERVED_DIRS]


def node_files(root: Path) -> list[Path]:
    """Every node file in the store's own domains (not nested stores), sorted."""
    return [
        path
        for domain in domain_dirs(root)
        for path in sorted(domain.rglob("*.md"))
        if path.name != ROUTER and not any(part.startswith(".") for part in path.relative_to(root).parts)
    ]


def nested_store_dirs(root: Path) -> list[tuple[str, Path]]:
    """``(kind, folder)`` for each nested agent or group store directly under ``root``."""
    return [
        (kind, p)
        for folder, kind in NESTED_DIRS.items()
        if (root / folder).is_dir()
        for p in sorted((root / folder).iterdir())
        if p.is_dir() and not p.name.startswith(".")
    ]


def curated_files(root: Path) -> Iterator[Path]:
    """Every non-private, non-hidden file under ``root`` (nested stores included), sorted."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        # agents/<name>/indexes/... and the like are private in the nested store too.
        nested = Path(*rel.parts[2:]) if rel.parts[0] in NESTED_DIRS else Path()
        private = is_private(rel) or is_private(nested)
        if path.is_file() and not private and not any(part.startswith(".") for part in rel.parts):
            yield path
