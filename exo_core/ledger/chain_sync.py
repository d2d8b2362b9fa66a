"""Sync two copies of one ledger without rewriting either chain.

A hash chain cannot merge two tails: entry ``b1`` names ``prev = P`` and so
cannot follow ``a1``. So a fork is kept *explicitly*. Each copy keeps its own
main chain (segment 0) and receives the other's divergent tail as a **fork
segment**: the foreign entries stored byte for byte (same id, prev, chain
hash and signature) on a segment whose base is the last shared entry. Every
entry of both copies survives in both, ``verify()`` passes on both, and
nothing is reordered, re-signed or hidden.

* :func:`import_entries` attaches foreign entries by their ``prev``: to the
  end of the chain they continue (fast-forward of main, or extending an
  earlier fork segment), or to a new fork segment when they branch off in
  the middle. Entries already present are skipped, so re-running is a no-op.
* :func:`sync_ledgers` checkpoints both copies first (signed statements of
  the two heads), decides whether the mains diverged, imports both ways and
  returns a :class:`SyncReport`; a :class:`Fork` in it carries the two
  conflicting signed checkpoints and the last shared height.
* :func:`common_prefix` finds the last shared main-chain entry.
* :func:`snapshot_ledger` copies a live ledger consistently (for export).

Resolving a fork (deciding what the person meant) is left to views and to the
person; the ledger only guarantees the fork is recorded and reported.
"""

from __future__ import annotations

import bisect
import contextlib
import sqlite3
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import ConflictError, CorruptDataError, StorageError, UsageError
from exo_core.ledger.checkpoint import Checkpoint, CheckpointBook
from exo_core.ledger.entry import StoredEntry, check_seal, decode_row
from exo_core.ledger.ledger import Head, Ledger, Segment, insert_entry
from exo_core.ledger.witness import make_checkpoint, record_checkpoint

__all__ = [
    "ImportResult",
    "Fork",
    "SyncReport",
    "import_entries",
    "common_prefix",
    "sync_ledgers",
    "forks",
    "snapshot_ledger",
    "same_entries",
]


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What :func:`import_entries` did."""

    imported: int
    skipped: int
    extended: tuple[int, ...]  # segments that grew at their end (0 = main fast-forward)
    new_segments: tuple[int, ...]  # fork segments created


@dataclass(frozen=True, slots=True)
class Fork:
    """Two copies whose main chains diverged after height ``base.size``."""

    base: Head
    local: Checkpoint
    foreign: Checkpoint


@dataclass(frozen=True, slots=True)
class SyncReport:
    """The outcome of :func:`sync_ledgers`."""

    local_before: Checkpoint
    foreign_before: Checkpoint
    fork: Fork | None
    into_local: ImportResult
    into_foreign: ImportResult


def import_entries(
    ledger: Ledger, entries: Iterable[StoredEntry], *, origin: str, pins: Collection[str] | None = None
) -> ImportResult:
    """Add foreign ``entries`` (in the source's arrival order) to ``ledger``.

    Every entry is checked (id, chain hash, signature, pinned author, refs
    resolvable) before anything is written; one bad entry refuses the whole
    import with :class:`CorruptDataError` and the ledger is unchanged.
    ``origin`` is recorded on any fork segment created (e.g. the other copy's
    path or machine).
    """
    imported = skipped = 0
    extended: list[int] = []
    created: list[int] = []
    with ledger.write_txn() as conn:
        for entry in entries:
            try:
                # Re-derive from the bytes: a caller-built StoredEntry whose kind,
                # scope, ts or idem disagree with its signed content is refused
                # here rather than stored inconsistent for verify() to find later.
                decode_row(
                    (
                        0,
                        0,
                        0,
                        entry.id,
                        entry.prev,
                        entry.chain,
                        entry.author,
                        entry.sig,
                        entry.kind,
                        entry.scope,
                        entry.ts,
                        entry.idem,
                        entry.content,
                    )
                )
                problem = check_seal(entry)
            except CorruptDataError as exc:
                problem = exc.message
            if problem is None and pins is not None and entry.author not in pins:
                problem = "signed by a key that is not pinned"
            if problem is not None:
                raise CorruptDataError(f"foreign entry {entry.id[:16]}… refused: {problem}; nothing imported")
            if conn.execute("SELECT 1 FROM entries WHERE chain=?", (entry.chain,)).fetchone():
                skipped += 1
                continue
            for ref in entry.refs:
                if not conn.execute("SELECT 1 FROM entries WHERE id=?", (ref,)).fetchone():
                    raise CorruptDataError(
                        f"foreign entry {entry.id[:16]}… refers to {ref[:16]}…, which neither "
                        "copy holds before it; nothing imported"
                    )
            found = (
                (0, 0)
                if entry.prev == ledger.genesis
                else conn.execute("SELECT seg, pos FROM entries WHERE chain=?", (entry.prev,)).fetchone()
            )
            if found is None:
                raise CorruptDataError(
                    f"foreign entry {entry.id[:16]}… follows a chain hash this ledger does not "
                    "hold (the source is missing entries, or is another ledger); nothing imported"
                )
            parent_seg, parent_pos = int(found[0]), int(found[1])
            taken = conn.execute("SELECT 1 FROM entries WHERE seg=? AND pos=?", (parent_seg, parent_pos + 1)).fetchone()
            if taken is None:
                seg = parent_seg  # continues that chain's end: fast-forward or extend a fork
                if seg not in extended and seg not in created:
                    extended.append(seg)
            else:
                seg = int(conn.execute("SELECT max(seg) FROM segments").fetchone()[0]) + 1
                conn.execute(
                    "INSERT INTO segments(seg, base_seg, base_pos, origin, ts) VALUES (?, ?, ?, ?, ?)",
                    (seg, parent_seg, parent_pos, origin, int(ledger.clock() * 1000)),
                )
                created.append(seg)
            insert_entry(conn, seg, parent_pos + 1, entry)
            imported += 1
    return ImportResult(imported, skipped, tuple(extended), tuple(created))


def common_prefix(a: Ledger, b: Ledger) -> Head:
    """The last height at which the two main chains hold the same entry.

    Chains share a prefix or nothing after their first difference (each hash
    covers all before it), so a binary search over heights is exact.
    """
    heights = range(1, min(a.head(0).size, b.head(0).size) + 1)
    shared = bisect.bisect_left(heights, True, key=lambda h: a.chain_at(0, h) != b.chain_at(0, h))
    return Head(shared, a.chain_at(0, shared))


def same_entries(a: Ledger, b: Ledger) -> bool:
    """True when both copies hold exactly the same entries (every chain hash of each in the other)."""
    if a.count() != b.count():
        return False
    chains = {bytes(row[0]) for row in a.query("SELECT CAST(chain AS BLOB) FROM entries")}
    return all(bytes(row[0]) in chains for row in b.query("SELECT CAST(chain AS BLOB) FROM entries"))


def _moved(ledger: Ledger, after_n: int) -> bool:
    """True when an entry other than a checkpoint arrived in ``ledger`` after ``after_n``."""
    return any(entry.kind != "checkpoint" for entry in ledger.entries(after_n=after_n))


def _on_main(ledger: Ledger, cp: Checkpoint) -> bool:
    return cp.size <= ledger.head(0).size and ledger.chain_at(0, cp.size) == cp.head


def sync_ledgers(
    local: Ledger,
    foreign: Ledger,
    *,
    pins: Collection[str] | None = None,
    book: CheckpointBook | None = None,
    record: bool = True,
    local_origin: str = "local copy",
    foreign_origin: str = "foreign copy",
) -> SyncReport:
    """Make both copies hold every entry of both; detect and report a fork.

    Both ledgers are verified first (a corrupt copy is never merged:
    :class:`CorruptDataError`). Signed checkpoints of both heads are taken
    with ``local``'s signer before anything moves and kept in ``book`` if
    given; with ``record``, a ``checkpoint`` entry is then appended to
    ``local`` and copied into ``foreign`` too, so the sync itself is on record.
    Copies that already hold the same entries are left as they are: nothing
    is imported, kept in ``book`` or recorded; when only checkpoint entries
    moved, no new one is recorded.
    """
    signer = local.signer
    if signer is None:
        raise UsageError("sync needs the local ledger opened with this machine's signing key")
    if local.ledger_id != foreign.ledger_id:
        raise ConflictError(
            f"these are two different ledgers ({local.ledger_id} and {foreign.ledger_id}); "
            "only copies of one store can be synced"
        )
    for name, ledger in (("local", local), ("foreign", foreign)):
        report = ledger.verify(pins=pins)
        if not report.ok:
            raise CorruptDataError(
                f"{name} copy {ledger.path} fails verify, not synced: {report.problems[0].describe()}"
            )
    local_cp, foreign_cp = make_checkpoint(local, signer), make_checkpoint(foreign, signer)
    if same_entries(local, foreign):
        # Converged copies: a sync that finds nothing to move writes nothing (no checkpoint either).
        nothing = ImportResult(0, local.count(), (), ())
        return SyncReport(local_cp, foreign_cp, None, nothing, nothing)
    diverged = not _on_main(local, foreign_cp) and not _on_main(foreign, local_cp)
    fork = Fork(common_prefix(local, foreign), local_cp, foreign_cp) if diverged else None
    local_mark, foreign_mark = local.max_n(), foreign.max_n()
    into_local = import_entries(local, foreign.entries(), origin=foreign_origin, pins=pins)
    mark = local.max_n()
    into_foreign = import_entries(foreign, local.entries(), origin=local_origin, pins=pins)
    if book is not None:
        book.add(local_cp, copy=local.path)
        book.add(foreign_cp, copy=foreign.path)
    # Only checkpoints moved (another sync's record reaching this copy): recording one more would
    # make the third copy out of date again, and three copies would never converge.
    news = _moved(local, local_mark) or _moved(foreign, foreign_mark)
    if record and news:
        # Copy the checkpoint entry and anything appended locally since the
        # import (exod may be writing meanwhile); present entries are skipped.
        record_checkpoint(local, book=book)
        import_entries(foreign, local.entries(after_n=mark), origin=local_origin, pins=pins)
    return SyncReport(local_cp, foreign_cp, fork, into_local, into_foreign)


def snapshot_ledger(ledger: Ledger, dest: str | Path) -> Path:
    """Copy ``ledger`` to a new file ``dest`` consistently, even while others append.

    Uses SQLite's online backup under a read transaction, so the copy is a
    committed state (never a half-written page, which a plain file copy taken
    during a commit can capture). ``dest`` must not exist (ConflictError).
    """
    dest = Path(dest)
    if dest.exists():
        raise ConflictError(f"{dest} already exists; snapshots never overwrite")
    try:
        with contextlib.closing(sqlite3.connect(dest)) as target:
            ledger.backup_to(target)
    except sqlite3.Error as exc:
        dest.unlink(missing_ok=True)
        raise StorageError(f"cannot snapshot ledger to {dest}: {exc}") from exc
    return dest


def forks(ledger: Ledger) -> list[Segment]:
    """The fork segments of ``ledger`` (every segment but main)."""
    return [s for s in ledger.segments() if s.seg != 0]
