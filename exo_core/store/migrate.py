"""Store format migrations: an older store is brought up to date without loss.

Format history (docs/store.md has the full table):

1. The first store: pack, router and nodes. STORE.toml had ``format`` and
   ``owner_keys`` only. Nodes named one ``source:`` (text) and wrote links as
   ``type:target`` text.
2. Store kinds and nesting (``kind``, ``store_id``), ``sources`` as a list,
   links as ``type [[target]]`` so Obsidian draws them, the items table.

A migration is a list of idempotent steps. Before the first step a journal
``.exo/migration.json`` is written (atomically) naming the target format and
the ids it will assign, and the original curated files are copied to
``.exo/backup-format-<n>/``; the last step rewrites STORE.toml and the journal
is removed after it. A crash (power cut, SIGKILL) at any point leaves the
journal behind, and the next open runs every step again: finished steps see
their work done and skip, so the store ends exactly as an uninterrupted
migration would have left it.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from exo_core.atomic import atomic_write_text, fsync_dir
from exo_core.store import layout
from exo_core.store.errors import StoreFormatError, StoreVersionError
from exo_core.store.frontmatter import FrontValue, dump_frontmatter, parse_document
from exo_core.store.store_toml import CURRENT_FORMAT, new_store_id, read_config, write_config

__all__ = ["migrate_store", "MigrationStep", "JOURNAL", "StepHook", "no_step"]

JOURNAL = "migration.json"
StepHook = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class MigrationStep:
    """One idempotent step of a migration from ``source`` to ``source + 1``."""

    source: int
    name: str
    run: Callable[[Path, dict[str, Any], StepHook], None]


def _journal_path(root: Path) -> Path:
    return root / layout.STATE_DIR / JOURNAL


def _read_journal(root: Path) -> dict[str, Any] | None:
    path = _journal_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StoreFormatError(
            f"unreadable migration journal ({exc}); restore the store from .exo/backup-format-*/ or an export",
            path=path,
            rule="migration",
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("from"), int):
        raise StoreFormatError("malformed migration journal", path=path, rule="migration")
    return data


# -- format 1 -> 2 -------------------------------------------------------------

_V1_LINK = re.compile(r"(?P<type>[a-z-]+):(?P<target>[A-Za-z0-9][A-Za-z0-9/_-]*)")


def _backup_v1(root: Path, journal: dict[str, Any], tick: StepHook) -> None:
    backup = root / layout.STATE_DIR / "backup-format-1"
    if backup.is_dir():
        return
    staging = root / layout.STATE_DIR / f".backup-format-1.tmp-{secrets.token_hex(4)}"
    for path in layout.curated_files(root):
        dest = staging / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    staging.mkdir(parents=True, exist_ok=True)
    fsync_dir(staging)
    staging.rename(backup)
    fsync_dir(backup.parent)


def _link_1_to_2(item: str, path: Path, line: int | None) -> str:
    if "[[" in item:
        return item  # already written the format-2 way
    match = _V1_LINK.fullmatch(item)
    if match is None:
        raise StoreFormatError(
            f"format-1 link {item!r} is not 'type:target'; fix it and open the store again",
            path=path,
            line=line,
            rule="migration",
        )
    return f"{match['type']} [[{match['target']}]]"


def _node_1_to_2(root: Path, journal: dict[str, Any], tick: StepHook) -> None:
    for path in layout.node_files(root):
        doc = parse_document(path.read_text(encoding="utf-8"), path=path)
        values = doc.values
        links_v2 = all(isinstance(v, str) and "[[" in v for v in (values.get("links") or []))
        if "sources" in values and "source" not in values and links_v2:
            continue  # already format 2 (this step ran before a crash)
        new: dict[str, FrontValue] = {}
        for key, value in values.items():
            if key == "source":
                new["sources"] = [value] if isinstance(value, str) and value else list(value or [])
            elif key == "links":
                new["links"] = [_link_1_to_2(item, path, doc.lines.get("links")) for item in value or []]
            else:
                new[key] = value
        new.setdefault("sources", [])
        new.setdefault("links", [])
        atomic_write_text(path, dump_frontmatter(new) + doc.body)
        tick(f"node:{path.relative_to(root).as_posix()}")


def _config_1_to_2(root: Path, journal: dict[str, Any], tick: StepHook) -> None:
    config = read_config(root)
    if config.format < 2:  # the journal holds the id chosen before the first step, so a rerun picks the same
        write_config(root, replace(config, format=2, kind="person", store_id=str(journal["store_id"])))


STEPS: tuple[MigrationStep, ...] = (
    MigrationStep(1, "backup", _backup_v1),
    MigrationStep(1, "nodes", _node_1_to_2),
    MigrationStep(1, "store-toml", _config_1_to_2),
)


def no_step(name: str) -> None:
    """The default step hook: nothing to observe."""


def _run(root: Path, journal: dict[str, Any], tick: StepHook) -> None:
    for step in STEPS:
        if step.source >= journal["from"]:
            tick(f"{step.source}:{step.name}:before")
            step.run(root, journal, tick)
            tick(f"{step.source}:{step.name}:after")
    _journal_path(root).unlink()
    fsync_dir(root / layout.STATE_DIR)
    tick("done")


def migrate_store(root: Path, *, on_step: StepHook | None = None) -> int:
    """Bring the store at ``root`` to :data:`CURRENT_FORMAT`; return the format it had.

    ``on_step`` is called with a step name before and after each step (tests
    use it to kill the process there). Raises :class:`StoreVersionError` for a
    format newer than this code.
    """
    root, tick = Path(root), on_step or no_step
    journal = _read_journal(root)
    if journal is not None:
        _run(root, journal, tick)
        return int(journal["from"])
    config = read_config(root)
    if config.format > CURRENT_FORMAT:
        raise StoreVersionError(
            f"{root}/STORE.toml: store format {config.format} is newer than this Exo understands "
            f"({CURRENT_FORMAT}); upgrade Exo before opening it (nothing was changed)"
        )
    if config.format == CURRENT_FORMAT:
        return config.format
    journal = {"from": config.format, "to": CURRENT_FORMAT, "store_id": config.store_id or new_store_id()}
    (root / layout.STATE_DIR).mkdir(exist_ok=True)
    atomic_write_text(_journal_path(root), json.dumps(journal, sort_keys=True, separators=(",", ":")))
    tick("journal")
    _run(root, journal, tick)
    return config.format
