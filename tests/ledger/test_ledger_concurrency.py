"""Four processes append to one ledger while a fifth (this test) SIGKILLs random writers.

Every append a writer acknowledged (printed after ``append`` returned) must be
present afterwards; heights are dense; nothing is duplicated; SQLite's
integrity_check is ok; and verify() passes.

Default run: 25 kill cycles. ``EXO_STRESS=1``: 300 cycles (set
``EXO_STRESS_CYCLES`` to change it).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from exo_core.ledger import Ledger, create_signing_key

from ledger_testkit import STRESS

CYCLES = int(os.environ.get("EXO_STRESS_CYCLES", "300")) if STRESS else 25
WRITERS = 4
ROOT = Path(__file__).resolve().parents[2]

# Runs in each writer process. The ACK line is written only after append()
# returned, i.e. after COMMIT with synchronous=FULL: that is the promise tested.
WRITER = r"""
import sys
from pathlib import Path
from exo_core.ledger import Ledger, load_signing_key
db, keys, tag = sys.argv[1], sys.argv[2], sys.argv[3]
ledger = Ledger.open(db, signer=load_signing_key(Path(keys)))
i = 0
while True:
    entry = ledger.append("utterance", {"text": f"{tag}-{i}"}, idem=f"{tag}-{i}")
    sys.stdout.write(f"ACK {entry.id} {tag}-{i}\n")
    sys.stdout.flush()
    i += 1
"""


class Writer:
    """One writer process and the thread collecting its acknowledgements."""

    def __init__(self, db: Path, keys: Path, tag: str, acks: list[tuple[str, str]]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(keys), tag],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.acks = acks
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # ends at EOF, i.e. when the process died
            parts = line.split()
            if len(parts) == 3 and parts[0] == "ACK":
                self.acks.append((parts[1], parts[2]))

    def kill(self) -> str:
        """SIGKILL the process, wait for it and its pipe; return its stderr."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.reader.join()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


def test_concurrent_appends_survive_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "ledger.sqlite"
    keys = tmp_path / "keys"
    create_signing_key(keys)
    Ledger.open(db, create=True, ledger_id="concurrent").close()
    rng = random.Random(4)
    acks: list[tuple[str, str]] = []
    generation = 0
    writers = []
    for slot in range(WRITERS):
        writers.append(Writer(db, keys, f"w{slot}g{generation}", acks))
        generation += 1
    hot_journal_kills = 0
    # The kills start once the writers append: on a busy machine a Python start-up alone outlasts the
    # 0.02-0.2 s between kills, and a run of kills before any append would test nothing.
    started = time.monotonic()
    while len(acks) < WRITERS and time.monotonic() - started < 120:
        time.sleep(0.05)
    try:
        for _cycle in range(CYCLES):
            time.sleep(rng.uniform(0.02, 0.2))
            slot = rng.randrange(WRITERS)
            victim = writers[slot]
            if victim.proc.poll() is None:
                os.kill(victim.proc.pid, signal.SIGKILL)
            journal = db.with_name(db.name + "-journal")
            if journal.exists() and journal.stat().st_size > 0:
                hot_journal_kills += 1  # somebody was mid-transaction around the kill
            stderr = victim.kill()
            assert victim.proc.returncode == -signal.SIGKILL, f"writer died on its own: {stderr[-2000:]}"
            writers[slot] = Writer(db, keys, f"w{slot}g{generation}", acks)
            generation += 1
    finally:
        for writer in writers:
            writer.kill()

    assert not db.with_name(db.name + "-wal").exists()
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()
    with Ledger.open(db) as ledger:
        entries = list(ledger.entries())
        report = ledger.verify(deep=True)
    assert report.ok, report.problems[:3]
    stored_ids = [e.id for e in entries]
    texts = [e.body["text"] for e in entries]
    assert len(set(stored_ids)) == len(stored_ids), "duplicate entry ids"
    assert len(set(texts)) == len(texts), "an append was stored twice"
    assert [e.pos for e in entries] == list(range(1, len(entries) + 1)), "heights are not dense"
    assert [e.n for e in entries] == list(range(1, len(entries) + 1)), "arrival numbers are not dense"
    assert all(e.seg == 0 for e in entries)
    missing = {ack for ack in acks if ack[0] not in set(stored_ids)}
    assert not missing, f"{len(missing)} acknowledged appends are gone, e.g. {sorted(missing)[:3]}"
    by_id = {e.id: e.body["text"] for e in entries}
    assert all(by_id[entry_id] == text for entry_id, text in acks)
    assert len(acks) > CYCLES, "writers made too little progress for the test to mean anything"
    print(
        f"\nconcurrency: {CYCLES} kill cycles, {generation} writer processes, {len(acks)} acked, "
        f"{len(entries)} stored, {hot_journal_kills} kills with a live journal"
    )
