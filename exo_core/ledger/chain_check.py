"""verify(): recompute every id, link, chain hash and signature of a ledger.

What is checked, entry by entry in arrival order (``n``):

* the row decodes: canonical content, known kind, valid body, and the
  denormalised columns agree with the signed content;
* ``id = sha256(content)``, ``chain = sha256(prev + id)``, and the signature
  verifies under the author's key; with ``pins``, the author is pinned (a
  valid signature by a key nobody trusts is still a bad entry);
* ``n`` is dense from 1 (a deleted row leaves a gap), ``pos`` is dense on its
  segment, ``prev`` is the chain hash of the entry before it on its chain
  (genesis for height 1; the fork base for a segment's first entry), and no
  chain hash appears twice (a duplicated row);
* every ref names an entry that arrived earlier; a ``checkpoint`` entry
  names a head on the chain at the height it says.

Then the ledger as a whole: the append-only triggers exist, segments agree
with their entries, and every given :class:`Checkpoint` (e.g. from the
machine's book) is signed and its head is still present at its height — a
ledger that lost its tail or was rolled back to an older copy fails here.

Memory: two dicts of the ids and chain hashes (about 250 bytes per entry).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from exo_core.errors import CorruptDataError
from exo_core.ledger.checkpoint import Checkpoint
from exo_core.ledger.db import TRIGGER_NAMES
from exo_core.ledger.entry import check_seal, decode_row

__all__ = ["Problem", "VerifyReport", "ReadableLedger", "verify_ledger"]


class _Height(Protocol):
    @property
    def size(self) -> int: ...


class ReadableLedger(Protocol):
    """What :func:`verify_ledger` reads of a ledger (:class:`~exo_core.ledger.ledger.Ledger` is one)."""

    @property
    def ledger_id(self) -> str: ...

    @property
    def genesis(self) -> str: ...

    def query(self, sql: str, args: Sequence[object] = ()) -> list[Any]: ...

    def raw_rows(self) -> Iterator[tuple[object, ...]]: ...

    def head(self, seg: int = 0) -> _Height: ...


@dataclass(frozen=True, slots=True)
class Problem:
    """One defect. ``n``/``seg``/``pos``/``id`` locate the entry when there is one."""

    reason: str
    n: int | None = None
    seg: int | None = None
    pos: int | None = None
    id: str | None = None

    def describe(self) -> str:
        """One line naming the entry (if any) and why it is bad."""
        if self.n is None:
            return self.reason
        where = f"entry n={self.n}"
        if self.seg is not None:
            where += f" (segment {self.seg}, height {self.pos})"
        if self.id:
            where += f" id {self.id[:16]}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of :func:`verify_ledger`; ``problems`` are in discovery order."""

    ledger_id: str
    entries: int
    segments: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def verify_ledger(
    ledger: ReadableLedger,
    *,
    pins: Collection[str] | None = None,
    checkpoints: Iterable[Checkpoint] = (),
    seen_heads: Iterable[Checkpoint] = (),
    max_problems: int = 50,
    deep: bool = False,
) -> VerifyReport:
    """Check ``ledger`` completely; see the module docstring for what is checked.

    ``pins``: the only key ids trusted as authors and checkpoint signers
    (None: any valid signature is accepted). ``checkpoints``: heads this
    machine saw before; ``seen_heads``: heads this machine itself committed to
    this very file (its :class:`~exo_core.ledger.witness.HomeWitness` record),
    reported as a rollback in plainer words. ``deep`` adds ``PRAGMA integrity_check``. Stops
    collecting after ``max_problems``; never raises for a bad ledger, only
    for one it cannot read at all (:class:`StorageError`).
    """
    problems: list[Problem] = []
    pinned = None if pins is None else frozenset(pins)

    def bad(reason: str, **where: object) -> bool:
        problems.append(Problem(reason, **where))  # type: ignore[arg-type]  # where: n/seg/pos/id locators only
        return len(problems) >= max_problems

    def holds(size: int, head: str) -> bool:  # is ``head`` on some chain at height ``size`` (genesis at 0)?
        return (size, head) == (0, ledger.genesis) or chains.get(head, (None, -1))[1] == size

    triggers = {r[0] for r in ledger.query("SELECT name FROM sqlite_master WHERE type='trigger'")}
    seg_rows = ledger.query("SELECT seg, base_seg, base_pos FROM segments ORDER BY seg")
    integrity = ledger.query("PRAGMA integrity_check") if deep else [("ok",)]
    for name in TRIGGER_NAMES:
        if name not in triggers:
            bad(f"append-only trigger {name} is missing: the ledger may have been edited")
    if [tuple(r) for r in integrity] != [("ok",)]:
        first_five = "; ".join(str(r[0]) for r in integrity[:5])
        bad(f"SQLite integrity_check: {first_five}")
    bases: dict[int, tuple[int | None, int]] = {seg: (base_seg, base_pos) for seg, base_seg, base_pos in seg_rows}
    if bases.get(0) != (None, 0):
        bad("segment 0 (main) is missing or does not start at genesis")

    ids: dict[str, int] = {}
    chains: dict[str, tuple[int, int]] = {}
    heads: dict[int, tuple[int, str]] = {}
    expected_n = 1
    count = 0
    # Undecoded rows: verify must see every defect itself, and entries() raises on the first bad row.
    for row in ledger.raw_rows():
        count += 1
        n = row[0] if isinstance(row[0], int) else None
        if n != expected_n:
            if bad(
                f"arrival number is {n!r}, expected {expected_n}: an entry was deleted, duplicated or renumbered",
                n=expected_n,
            ):
                break
        expected_n = (n if n is not None else expected_n) + 1
        try:
            entry = decode_row(row)
        except CorruptDataError as exc:
            if bad(exc.message, n=n):
                break
            continue
        where = {"n": entry.n, "seg": entry.seg, "pos": entry.pos, "id": entry.id}
        reasons: list[str] = []
        if seal_problem := check_seal(entry):
            reasons.append(seal_problem)
        if pinned is not None and entry.author not in pinned:
            reasons.append(f"signed by {entry.author[:24]}…, which is not a pinned key")
        if entry.seg not in bases:
            reasons.append(f"segment {entry.seg} is not in the segments table")
        elif entry.seg in heads:
            last_pos, last_chain = heads[entry.seg]
            if entry.pos != last_pos + 1:
                reasons.append(f"height {entry.pos} follows {last_pos} on its segment (not dense)")
            if entry.prev != last_chain:
                reasons.append("prev is not the chain hash of the entry before it (removed, reordered or inserted)")
        else:
            base_seg, base_pos = bases[entry.seg]
            expected_prev = (
                ledger.genesis
                if base_pos == 0
                else next((c for c, at in chains.items() if at == (base_seg, base_pos)), "")
            )
            if entry.pos != base_pos + 1:
                reasons.append(f"first height on segment {entry.seg} is {entry.pos}, expected {base_pos + 1}")
            if entry.prev != expected_prev:
                reasons.append("prev does not link to the genesis/fork base of its segment")
        if entry.chain in chains:
            reasons.append("duplicate of an earlier entry (same chain hash)")
        for ref in entry.refs:
            if ref not in ids:
                reasons.append(f"refs {ref[:16]}…, which is not an earlier entry")
        if entry.kind == "checkpoint" and not holds(entry.body["size"], entry.body["head"]):
            reasons.append("checkpoint entry names a head that is not at that height")
        # Resynchronise on the stored values so one break is reported once,
        # not again for every later entry of the same segment.
        heads[entry.seg] = (entry.pos, entry.chain)
        chains.setdefault(entry.chain, (entry.seg, entry.pos))
        ids.setdefault(entry.id, entry.n)
        if reasons and bad("; ".join(reasons), **where):
            break

    for seg in bases:
        if seg != 0 and seg not in heads and len(problems) < max_problems:
            bad(f"segment {seg} has no entries")
    for cp in checkpoints:
        if len(problems) >= max_problems:
            break
        label = f"checkpoint (height {cp.size}, head {cp.head[:16]}…, by {cp.signer[:24]}…)"
        if cp.ledger_id != ledger.ledger_id:
            bad(f"{label} is for ledger {cp.ledger_id}, not this one")
        elif not cp.signature_ok():
            bad(f"{label} has a bad signature")
        elif pinned is not None and cp.signer not in pinned:
            bad(f"{label} is signed by a key that is not pinned")
        elif not holds(cp.size, cp.head):
            bad(f"{label} is not in this ledger: its tail was dropped or it was rolled back to an older copy")
    for seen in seen_heads:
        if len(problems) >= max_problems:
            break
        if seen.ledger_id != ledger.ledger_id:
            bad(
                f"this file held ledger {seen.ledger_id} when this machine last wrote it (height {seen.size}); "
                f"it now holds ledger {ledger.ledger_id}: the ledger was replaced"
            )
        elif not seen.signature_ok():
            bad(f"the head this machine recorded for this file (height {seen.size}) has a bad signature")
        elif not holds(seen.size, seen.head):
            bad(
                f"this machine wrote this ledger up to height {seen.size} (head {seen.head[:16]}…), "
                f"which it no longer holds (main height now {ledger.head(0).size}): its tail was dropped or it "
                "was rolled back to an older copy. A ledger only grows; put the newer copy back, or sync the "
                "older one with it ('exo store sync') if both were used"
            )
    return VerifyReport(ledger.ledger_id, count, len(bases), tuple(problems))
