"""Tampering: every single-byte change to any stored field of 100 entries is caught by verify().

The database's own defences (triggers, UNIQUE constraints, foreign keys) are
removed from the working copy first, so these tests exercise verify() alone:
an attacker with the file can drop all of them.

Default run: every field of every entry, one seeded random byte each (plus
every byte of every field of entries 1 and 50). ``EXO_STRESS=1``: every byte of
every field of all 100 entries.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ledger_testkit import STRESS

from exo_core.ledger import CheckpointBook, Ledger, Signer, record_checkpoint
from exo_core.ledger.chain_check import VerifyReport, verify_ledger
from exo_core.ledger.db import TRIGGER_NAMES, connect

COLUMNS = ("n", "seg", "pos", "id", "prev", "chain", "author", "sig", "kind", "scope", "ts", "idem", "content")
MakeLedger = Callable[..., Ledger]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 100-entry ledger file (built once per module)."""
    from ledger_testkit import FakeClock, fill

    path = tmp_path_factory.mktemp("pristine") / "ledger.sqlite"
    ledger = Ledger.open(
        path, signer=Signer.from_seed(bytes(range(32))), create=True, ledger_id="tamper", clock=FakeClock()
    )
    fill(ledger, 100)
    assert ledger.verify().ok
    ledger.close()
    return path


class Workbench:
    """A copy of the ledger with every database defence removed, and savepoint-scoped edits."""

    def __init__(self, source: Path, dest: Path) -> None:
        shutil.copyfile(source, dest)
        self.conn = connect(dest, create=False)
        self.conn.execute("PRAGMA foreign_keys=OFF")
        self.conn.execute("PRAGMA synchronous=OFF")  # a scratch copy: speed over durability
        for name in TRIGGER_NAMES:
            self.conn.execute(f"DROP TRIGGER {name}")
        self.conn.executescript(
            "BEGIN; CREATE TABLE bare AS SELECT * FROM entries; DROP TABLE entries; "
            "ALTER TABLE bare RENAME TO entries; COMMIT;"
        )
        self.ledger = Ledger(self.conn, dest, "tamper", signer=None, scope="person", clock=lambda: 0.0)
        self.rows = {r[0]: r for r in self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM entries")}

    def verify_with(self, edit: str, args: tuple[object, ...] = ()) -> VerifyReport:
        """Apply ``edit`` inside a savepoint, verify, and roll the edit back."""
        self.conn.execute("SAVEPOINT t")
        try:
            self.conn.execute(edit, args)
            # 6 "trigger missing" problems come first; one more means an entry was caught.
            return verify_ledger(self.ledger, max_problems=len(TRIGGER_NAMES) + 1)
        finally:
            self.conn.execute("ROLLBACK TO t")
            self.conn.execute("RELEASE t")


@pytest.fixture
def bench(pristine: Path, tmp_path: Path) -> Iterator[Workbench]:
    wb = Workbench(pristine, tmp_path / "work.sqlite")
    yield wb
    wb.conn.close()


def _flip(value: object, position: int, xor: int) -> object:
    if value is None:
        return "x"  # an absent idem key made present
    if isinstance(value, int):
        flipped = value ^ (xor << (8 * (position % 7)))  # stays within signed 64-bit
        return flipped
    raw = value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[arg-type]
    out = bytearray(raw)
    out[position % len(out)] ^= xor
    if isinstance(value, str):
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError:
            return bytes(out)  # stored as a BLOB: still must be caught
    return bytes(out)


def _positions(value: object) -> int:
    if value is None:
        return 1
    if isinstance(value, int):
        return 7
    return len(value.encode() if isinstance(value, str) else value)  # type: ignore[arg-type]


def _entry_problems(report: VerifyReport) -> list[int | None]:
    return [p.n for p in report.problems if p.n is not None]


def _check_flip(bench: Workbench, n: int, column: str, position: int, xor: int) -> None:
    value = bench.rows[n][COLUMNS.index(column)]
    report = bench.verify_with(f"UPDATE entries SET {column}=? WHERE n=?", (_flip(value, position, xor), n))
    caught = _entry_problems(report)
    assert caught, f"flip of {column} byte {position} in entry {n} was not detected"
    if column != "n":
        assert caught[0] == n, f"{column} flip in entry {n} blamed entry {caught[0]}"


def test_untouched_workbench_has_only_the_missing_triggers(bench: Workbench) -> None:
    report = verify_ledger(bench.ledger)
    assert [p.n for p in report.problems] == [None] * len(TRIGGER_NAMES)
    assert all("trigger" in p.reason for p in report.problems)


def test_one_random_byte_of_every_field_of_every_entry(bench: Workbench) -> None:
    rng = random.Random(20260916)
    for n in sorted(bench.rows):
        for column in COLUMNS:
            position = rng.randrange(_positions(bench.rows[n][COLUMNS.index(column)]))
            _check_flip(bench, n, column, position, rng.randrange(1, 256))


@pytest.mark.parametrize("n", [1, 50] if not STRESS else list(range(1, 101)))
def test_every_byte_of_every_field(bench: Workbench, n: int) -> None:
    rng = random.Random(n)
    for column in COLUMNS:
        for position in range(_positions(bench.rows[n][COLUMNS.index(column)])):
            _check_flip(bench, n, column, position, rng.randrange(1, 256))


@pytest.mark.parametrize("n", [1, 37, 99, 100])
def test_deleting_an_entry_is_detected(bench: Workbench, n: int) -> None:
    report = bench.verify_with("DELETE FROM entries WHERE n=?", (n,))
    if n == 100:
        assert not _entry_problems(report)  # a dropped tail needs a checkpoint: see below
    else:
        assert _entry_problems(report)[0] == n  # the gap is named where the missing entry was


def test_reordering_two_entries_is_detected(bench: Workbench) -> None:
    a, b = bench.rows[10], bench.rows[11]
    cols = COLUMNS[1:]
    bench.conn.execute("SAVEPOINT swap")
    for src, dst in ((b, 10), (a, 11)):
        bench.conn.execute(f"UPDATE entries SET {', '.join(c + '=?' for c in cols)} WHERE n=?", (*src[1:], dst))
    report = verify_ledger(bench.ledger, max_problems=len(TRIGGER_NAMES) + 1)
    bench.conn.execute("ROLLBACK TO swap")
    bench.conn.execute("RELEASE swap")
    assert _entry_problems(report) == [10]


@pytest.mark.parametrize("source_n", [1, 50, 100])
def test_duplicating_an_entry_is_detected(bench: Workbench, source_n: int) -> None:
    row = bench.rows[source_n]
    report = bench.verify_with(
        f"INSERT INTO entries({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", (101, *row[1:])
    )
    assert _entry_problems(report) == [101]


def test_dropped_tail_and_rollback_are_detected_against_checkpoints(
    make_ledger: MakeLedger,
    filler: Callable[[Ledger, int], list[str]],
    tmp_path: Path,
) -> None:
    ledger = make_ledger()
    filler(ledger, 20)
    old_copy = tmp_path / "old.sqlite"
    shutil.copyfile(ledger.path, old_copy)
    book = CheckpointBook(tmp_path / "book.sqlite")
    filler(ledger, 10)
    _entry, checkpoint = record_checkpoint(ledger, book=book)
    assert ledger.verify(checkpoints=book.for_ledger(ledger.ledger_id)).ok

    raw = sqlite3.connect(ledger.path)
    raw.executescript(
        "DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE n > 28; "
        "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN "
        "SELECT RAISE(ABORT, 'the ledger is append-only: DELETE on entries refused'); END;"
    )
    raw.close()
    assert ledger.verify().ok  # nothing inside the file betrays a clean cut ...
    report = ledger.verify(checkpoints=[checkpoint])  # ... but this machine's checkpoint does
    assert not report.ok and "tail was dropped" in report.problems[0].reason

    with Ledger.open(old_copy) as old:
        assert old.verify().ok
        assert not old.verify(checkpoints=book.for_ledger("test-ledger")).ok
    book.close()


def test_valid_signature_by_an_unpinned_key_is_caught(
    make_ledger: MakeLedger,
    signer: Signer,
    other_signer: Signer,
    tmp_path: Path,
) -> None:
    ledger = make_ledger()
    ledger.append("utterance", {"text": "mine"})
    with Ledger.open(ledger.path, signer=other_signer) as intruder:
        intruder.append("utterance", {"text": "not the owner's words"})
    ledger.append("utterance", {"text": "mine again"})
    assert ledger.verify().ok  # every signature is valid ...
    report = ledger.verify(pins=[signer.key_id])
    assert [p.n for p in report.problems] == [2] and "not a pinned key" in report.problems[0].reason
    assert ledger.verify(pins=[signer.key_id, other_signer.key_id]).ok


def test_dropped_trigger_is_reported(make_ledger: MakeLedger) -> None:
    ledger = make_ledger()
    ledger.append("utterance", {"text": "x"})
    raw = sqlite3.connect(ledger.path)
    raw.execute("DROP TRIGGER entries_no_update")
    raw.close()
    report = ledger.verify()
    assert not report.ok and "entries_no_update" in report.problems[0].reason


def test_resigned_history_is_caught_only_by_checkpoint(
    make_ledger: MakeLedger,
    signer: Signer,
    tmp_path: Path,
) -> None:
    """Someone holding the key rewrites entry 3 and re-seals everything after it."""
    from exo_core.ledger.entry import ROW_COLUMNS, decode_row, seal

    ledger = make_ledger()
    for i in range(6):
        ledger.append("utterance", {"text": f"m{i}"})
    checkpoint = record_checkpoint(ledger)[1]
    forged = Ledger.open(tmp_path / "forged.sqlite", signer=signer, create=True, ledger_id="test-ledger")
    prev = forged.genesis
    for row in ledger.query(f"SELECT {ROW_COLUMNS} FROM entries WHERE kind != 'checkpoint' ORDER BY n"):
        entry = decode_row(row)
        content = entry.content.replace(b'"m2"', b'"forged"')
        entry_id, chain, sig = seal(content, prev, signer)
        forged.query(
            "INSERT INTO entries(seg,pos,id,prev,chain,author,sig,kind,scope,ts,idem,content) "
            "VALUES (0,?,?,?,?,?,?,?,?,?,?,?)",
            (
                entry.pos,
                entry_id,
                prev,
                chain,
                entry.author,
                sig,
                entry.kind,
                entry.scope,
                entry.ts,
                entry.idem,
                content,
            ),
        )
        prev = chain
    third = forged.query("SELECT id FROM entries WHERE pos=3")[0][0]
    assert forged.get(third).body == {"text": "forged"}
    assert forged.verify().ok  # a key holder can forge a self-consistent history ...
    report = forged.verify(checkpoints=[checkpoint])  # ... which the machine's checkpoint exposes
    assert not report.ok and "rolled back" in report.problems[0].reason
    forged.close()
