"""Conflicts a sync left open, and ``exo store resolve``: the person's choice, recorded in the ledger.

A sync that finds a curated file changed differently in two copies keeps each
copy's own version and the other's under ``.exo/conflicts/<sync id>/`` and
lists it in ``.exo/conflicts/open.json`` (:class:`OpenConflict`).
:func:`resolve_conflict` settles one, in the copy it runs on:

* ``mine``: this copy's version stays;
* ``theirs``: the other copy's version replaces it (or its deletion applies);
* ``both``: a belief node only: one version stays current (``current``) and
  the other is kept beside it as a superseded node (``valid_until`` set, a
  ``supersedes`` link from the current one), so the history is not lost.

exod tells every screen (:class:`ConflictWatch`: a ``notice`` when it starts
and whenever a sync opens a new conflict, which a sync run while exod serves
can do).

The choice is a ``resolve`` ledger entry (path, choice, the version kept and
the versions it supersedes). The entry travels with the ledger, and the next
``exo store sync`` reads it: the kept version replaces the superseded ones in
the other copy, so the two converge without asking again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.atomic import atomic_write_bytes
from exo_core.errors import ConflictError, NotFoundError, UsageError
from exo_core.private_files import private_dir
from exo_core.store import layout
from exo_core.store.errors import StoreFormatError
from exo_core.store.export_manifest import canonical_json, hash_file
from exo_core.store.node import NODE_ID, Node, parse_node

if TYPE_CHECKING:
    from exo_core.store.ledger_bridge import LedgerLike, LedgerReader

__all__ = [
    "OpenConflict",
    "Resolution",
    "CHOICES",
    "read_open",
    "write_open",
    "open_conflicts",
    "resolutions",
    "resolve_conflict",
    "conflict_notice",
    "ConflictWatch",
]

CHOICES = ("mine", "theirs", "both")
OPEN_FILE = f"{layout.STATE_DIR}/conflicts/open.json"


@dataclass(frozen=True, slots=True)
class OpenConflict:
    """One file two copies changed differently; ``saved`` holds the other's version (None: it deleted the file)."""

    path: str
    sync_id: str
    mine: str | None
    theirs: str | None
    saved: str | None
    other: str

    def to_json(self) -> dict[str, str | None]:
        """The form kept in ``open.json``."""
        return {
            "sync": self.sync_id,
            "mine": self.mine,
            "theirs": self.theirs,
            "saved": self.saved,
            "other": self.other,
        }


@dataclass(frozen=True, slots=True)
class Resolution:
    """What :func:`resolve_conflict` did."""

    path: str
    keep: str
    kept: str | None
    superseded: tuple[str | None, ...]
    written: tuple[str, ...]
    entry_id: str

    def render(self) -> str:
        """One line for the person."""
        wrote = f"; wrote {', '.join(self.written)}" if self.written else "; no file changed"
        return (
            f"resolved {self.path}: kept {self.keep}{wrote}; recorded in the ledger (entry {self.entry_id[:16]}). "
            "Run 'exo store sync' with the other copy to give it the same version"
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_open(root: Path) -> dict[str, OpenConflict]:
    """The conflicts open in the copy at ``root`` (empty when none, or when the list is unreadable)."""
    try:
        doc = json.loads((root / OPEN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    out = {}
    for rel, entry in doc.items():
        if not isinstance(rel, str) or not isinstance(entry, dict):
            continue
        sync_id, other = _text(entry.get("sync")), _text(entry.get("other"))
        if sync_id is None or other is None:
            continue
        mine, theirs, saved = _text(entry.get("mine")), _text(entry.get("theirs")), _text(entry.get("saved"))
        out[rel] = OpenConflict(rel, sync_id, mine, theirs, saved, other)
    return out


def write_open(root: Path, opened: Mapping[str, OpenConflict]) -> None:
    """Replace the open-conflict list of ``root`` (the file is removed when none is open)."""
    path = root / OPEN_FILE
    if not opened:
        path.unlink(missing_ok=True)
        return
    private_dir(path.parent)
    atomic_write_bytes(path, canonical_json({rel: c.to_json() for rel, c in sorted(opened.items())}))


def open_conflicts(root: Path) -> list[OpenConflict]:
    """The open conflicts of ``root``, by path (what ``exo store resolve`` and exod's notice list)."""
    return [conflict for _, conflict in sorted(read_open(root).items())]


def resolutions(ledger: LedgerReader) -> dict[str, dict[str | None, set[str | None]]]:
    """Every ``resolve`` entry as ``{path: {kept state: superseded states}}`` (None: deleted)."""
    out: dict[str, dict[str | None, set[str | None]]] = {}
    for entry in ledger.entries(kind="resolve"):
        body = entry.body
        kept = body["kept"] or None
        superseded = {state or None for state in body["superseded"]}
        out.setdefault(str(body["path"]), {}).setdefault(kept, set()).update(superseded)
    return out


def _state(path: Path) -> str | None:
    return hash_file(path)[0] if path.is_file() else None


def _history_id(node: Node, theirs: str) -> str:
    domain, _, name = node.id.rpartition("/")
    suffix = f"-was-{theirs[:8]}"
    return f"{domain}/{name[: 63 - len(suffix)]}{suffix}"


def _keep_both(root: Path, rel: str, current_text: str, other_text: str, other_state: str) -> list[str]:
    """Write ``current_text`` at ``rel`` and ``other_text`` beside it as the belief it supersedes."""
    from exo_core.store.store import Store

    try:
        current = parse_node(current_text, path=root / rel)
        other = parse_node(other_text, path=root / rel)
    except StoreFormatError as exc:
        raise UsageError(
            f"{rel}: 'both' keeps the other version as a superseded belief, which only a belief node can be "
            f"({exc}); choose --keep mine or --keep theirs (the other version stays under .exo/conflicts/)",
            field="keep",
        ) from exc
    history_id = _history_id(other, other_state)
    if not NODE_ID.fullmatch(history_id):
        raise UsageError(f"{rel}: cannot name a history node for {other.id!r}", field="keep")
    store = Store.open(root)
    store.write_node(dataclasses.replace(other, id=history_id))
    store.supersede(history_id, current)
    return [rel, f"{history_id}.md"]


def resolve_conflict(
    root: Path | str,
    rel: str,
    keep: str,
    ledger: LedgerLike,
    *,
    current: str = "mine",
) -> Resolution:
    """Settle the open conflict over ``rel`` in the copy at ``root`` (see the module docstring).

    ``ledger`` is this copy's ledger, opened with this machine's key. Raises
    :class:`NotFoundError` when no conflict is open for ``rel`` and
    :class:`UsageError` for a choice that does not fit the file.
    """
    root = Path(root).resolve()
    if keep not in CHOICES:
        raise UsageError(f"--keep {keep!r}: choose one of {', '.join(CHOICES)}", field="keep")
    if current not in ("mine", "theirs"):
        raise UsageError(f"--current {current!r}: choose mine or theirs", field="current")
    opened = read_open(root)
    conflict = opened.get(rel)
    if conflict is None:
        listed = ", ".join(sorted(opened)) or "none"
        raise NotFoundError(f"no open sync conflict for {rel!r} in {root} (open: {listed})")
    target = root / rel
    mine_state = _state(target)
    theirs_bytes = None if conflict.saved is None else (root / conflict.saved).read_bytes()
    theirs_state = conflict.theirs
    written: list[str] = []
    superseded: tuple[str | None, ...]
    if keep == "mine":
        kept, superseded = mine_state, (theirs_state,)
    elif keep == "theirs":
        if theirs_bytes is None:
            target.unlink(missing_ok=True)
        else:
            private_dir(target.parent)
            atomic_write_bytes(target, theirs_bytes)
        written.append(rel)
        kept, superseded = _state(target), (mine_state,)
    else:
        if theirs_bytes is None or mine_state is None or theirs_state is None:
            raise ConflictError(
                f"{rel}: one copy deleted it, so there are not two versions to keep; "
                "choose --keep mine or --keep theirs"
            )
        mine_text, theirs_text = target.read_text(encoding="utf-8"), theirs_bytes.decode("utf-8")
        if current == "mine":
            written = _keep_both(root, rel, mine_text, theirs_text, theirs_state)
        else:
            written = _keep_both(root, rel, theirs_text, mine_text, mine_state)
        kept, superseded = _state(target), (mine_state, theirs_state)
    replaced = [state or "" for state in superseded if state != kept]
    entry_id = ""
    if replaced:  # empty only when the two versions were made equal by hand meanwhile
        body = {"path": rel, "keep": keep, "kept": kept or "", "superseded": replaced}
        entry_id = ledger.append("resolve", body).id
    del opened[rel]
    write_open(root, opened)
    return Resolution(rel, keep, kept, superseded, tuple(written), entry_id)


def conflict_notice(opened: list[OpenConflict]) -> str:
    """One line for every screen: what is open and the command that settles it."""
    paths = ", ".join(c.path for c in opened[:5]) + (f" and {len(opened) - 5} more" if len(opened) > 5 else "")
    return (
        f"{len(opened)} sync conflict(s) open in the store: {paths}. The two copies disagree; settle each with "
        f"'exo store resolve {opened[0].path} --keep mine|theirs|both', then sync again"
    )


class ConflictWatch:
    """Tells every screen about open sync conflicts: once at start, then when the open set changes."""

    def __init__(self, root: Path, emit: Callable[[str], Awaitable[None]], *, every: float = 10.0) -> None:
        self.root = root
        self.emit = emit
        self.every = every
        self._told: frozenset[tuple[str, str]] = frozenset()
        self._stamp: tuple[int, int] | None = None

    def _changed(self) -> bool:
        try:
            info = (self.root / OPEN_FILE).stat()
        except OSError:
            stamp = None
        else:
            stamp = (info.st_mtime_ns, info.st_size)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        return True

    async def check(self) -> None:
        """Emit one notice when conflicts are open that this watch has not told of yet."""
        if not self._changed():
            return
        opened = await asyncio.to_thread(open_conflicts, self.root)
        seen = frozenset((c.path, c.sync_id) for c in opened)
        if opened and not seen <= self._told:
            await self.emit(conflict_notice(opened))
        self._told = seen

    async def run(self) -> None:
        """Check now and every ``every`` seconds until cancelled."""
        while True:
            await self.check()
            await asyncio.sleep(self.every)
