"""Several copies of one store on one machine: the checkpoint book is kept per copy.

A checkpoint says "this copy reached head H"; a legitimately grown *other* copy of the
same ledger (made before H, used since) does not hold H, and that is not a rollback.
Verifying that copy must pass, while a copy that really lost its own tail still fails.
Real homes and stores, real ``exo`` processes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from test_ledger_trust_anchor import _ingest, exo, home  # noqa: F401 - home is the fixture of that module

from exo_core.ledger import CheckpointBook, Ledger


def _ingest_into(home: Path, store: Path, tmp_path: Path, name: str, count: int) -> None:
    notes = tmp_path / f"notes-{name}"
    notes.mkdir()
    for i in range(count):
        (notes / f"{name}-{i}.md").write_text(f"# {name} {i}\n\nA note about {name} number {i}.\n")
    done = exo(home, "store", "--store", str(store), "ingest", "notes", str(notes))
    assert done.returncode == 0, done.stderr


def test_a_grown_copy_is_not_a_rolled_back_one(home: Path, tmp_path: Path) -> None:
    live = home / "store"
    copy = tmp_path / "second-copy"
    shutil.copytree(live, copy)  # a second working copy of the same store on this machine
    exported = exo(home, "store", "export", str(tmp_path / "export"))  # a checkpoint of the live copy
    assert exported.returncode == 0, exported.stderr
    _ingest(home, tmp_path, "live-more", 3)
    _ingest_into(home, copy, tmp_path, "copy-more", 4)  # the copy grows on its own: a fork, not a rollback

    grown = exo(home, "ledger", "verify", "--store", str(copy))
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert exo(home, "ledger", "verify").returncode == 0

    # The copy's own checkpoint, then the copy put back to before it: that is a rollback, and it is caught.
    before = tmp_path / "copy-before.sqlite"
    with Ledger.open_store(copy) as ledger, sqlite3.connect(before) as target:
        ledger.backup_to(target)
    assert exo(home, "store", "--store", str(copy), "export", str(tmp_path / "export-copy")).returncode == 0
    shutil.copyfile(before, copy / "ledger.sqlite")
    rolled = exo(home, "ledger", "verify", "--store", str(copy))
    assert rolled.returncode == 1 and "rolled back" in rolled.stdout, rolled.stdout
    # The live copy is untouched by any of it.
    assert exo(home, "ledger", "verify").returncode == 0


def test_a_book_from_before_copies_were_told_apart_still_checks_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "book.sqlite"
    with sqlite3.connect(path) as db:  # the book's first layout: no column naming the copy
        db.execute(
            "CREATE TABLE checkpoints (ledger TEXT NOT NULL, size INTEGER NOT NULL, "
            "head TEXT NOT NULL, doc TEXT NOT NULL, UNIQUE (ledger, size, head, doc))"
        )
    book = CheckpointBook(path)
    try:
        assert book.for_ledger("L", copy=tmp_path / "a") == []
        columns = [row[1] for row in book.query("PRAGMA table_info(checkpoints)", ())]
        assert "copy" in columns
    finally:
        book.close()
