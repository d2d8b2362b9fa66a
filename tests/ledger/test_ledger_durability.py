"""Journal mode and durability settings (SQLite 3.40's WAL checkpoint bug is avoided by not using WAL)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from exo_core.ledger import Ledger, Signer
from exo_core.ledger.db import connect


def test_rollback_journal_and_full_sync(tmp_path: Path) -> None:
    conn = connect(tmp_path / "l.sqlite", create=True)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "truncate"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    conn.close()


def test_never_creates_a_wal_file(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    ledger = make_ledger()
    for i in range(50):
        ledger.append("utterance", {"text": f"m{i}"})
    reader = Ledger.open(ledger.path)
    assert reader.verify().ok
    assert not (tmp_path / "ledger.sqlite-wal").exists()
    reader.close()


def test_a_wal_mode_copy_is_switched_back(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger.open(path, signer=signer, create=True).close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"  # as if copied from elsewhere
    raw.close()
    with Ledger.open(path, signer=signer) as ledger:
        ledger.append("utterance", {"text": "after"})
        assert ledger.query("PRAGMA journal_mode")[0][0] == "truncate"
    assert not (tmp_path / "ledger.sqlite-wal").exists()


def test_committed_entry_survives_an_unclean_close(tmp_path: Path, signer: Signer) -> None:
    # The process analogue of a power cut is covered by the SIGKILL test; here
    # a second connection must see a committed entry with no close() at all.
    writer = Ledger.open(tmp_path / "l.sqlite", signer=signer, create=True)
    entry = writer.append("utterance", {"text": "durable"})
    reader = Ledger.open(tmp_path / "l.sqlite")
    assert reader.get(entry.id).body == {"text": "durable"}
    reader.close()
    writer.close()
