"""Issue 19 item 7: the ledger's trust anchor lives outside the store it protects.

Real homes made by ``exo init``, real entries written by ``exo store ingest`` (a real
process, the same path exod's writers take), real SQLite files edited as an
attacker with write access to the store folder (but not to the Exo home) would.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from exo_core.ledger import Ledger, Signer

ROOT = Path(__file__).resolve().parents[2]


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    env.update({"EXO_HOME": str(home), "PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _ingest(home: Path, tmp_path: Path, name: str, count: int) -> None:
    notes = tmp_path / f"notes-{name}"
    notes.mkdir()
    for i in range(count):
        (notes / f"{name}-{i}.md").write_text(f"# {name} {i}\n\nA note about {name} number {i}.\n")
    done = exo(home, "store", "ingest", "notes", str(notes))
    assert done.returncode == 0, done.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home made by ``exo init`` whose store holds 12 entries written by ``exo store ingest``."""
    home = tmp_path / "home"
    made = exo(home, "init")
    assert made.returncode == 0, made.stderr
    _ingest(home, tmp_path, "first", 12)
    return home


def _verify_both(home: Path) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    return exo(home, "ledger", "verify"), exo(home, "store", "verify")


def _delete_rows(ledger_path: Path, where: str) -> None:
    """What an attacker with the folder does: drop the guard, delete, put the guard back."""
    raw = sqlite3.connect(ledger_path)
    raw.executescript(
        f"DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE {where}; CREATE TRIGGER "
        "entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: "
        "DELETE on entries refused'); END;"
    )
    raw.close()


def test_history_resigned_with_a_key_added_to_store_toml_fails(home: Path) -> None:
    store = home / "store"
    ok_ledger, ok_store = _verify_both(home)
    assert ok_ledger.returncode == 0 and ok_store.returncode == 0, ok_ledger.stdout + ok_store.stdout
    attacker = Signer.generate()
    with Ledger.open_store(store) as original:
        ledger_id = original.ledger_id
        entries = list(original.entries())
    forged = store / "forged.sqlite"
    ids: dict[str, str] = {}
    with Ledger.open(forged, signer=attacker, create=True, ledger_id=ledger_id) as ledger:
        for entry in entries:
            body = dict(entry.body)
            if entry.kind == "item":
                body["title"] = "rewritten by someone else"
            new = ledger.append(entry.kind, body, refs=[ids[r] for r in entry.refs], scope=entry.scope)
            ids[entry.id] = new.id
    os.replace(forged, store / "ledger.sqlite")
    toml = (store / "STORE.toml").read_text()
    (store / "STORE.toml").write_text(toml.replace("owner_keys = [", f'owner_keys = ["{attacker.key_id}", '))
    bad_ledger, bad_store = _verify_both(home)
    assert bad_ledger.returncode == 1, bad_ledger.stdout + bad_ledger.stderr
    assert "not a pinned key" in bad_ledger.stdout
    assert bad_store.returncode == 1 and "not a pinned key" in bad_store.stdout, bad_store.stdout


def test_empty_truncated_and_rolled_back_ledgers_fail_without_any_checkpoint(home: Path, tmp_path: Path) -> None:
    store = home / "store"
    older = tmp_path / "older.sqlite"
    with Ledger.open_store(store) as ledger:
        ledger_id = ledger.ledger_id
        with sqlite3.connect(older) as target:
            ledger.backup_to(target)
    _ingest(home, tmp_path, "second", 6)
    assert exo(home, "ledger", "verify").returncode == 0
    live = store / "ledger.sqlite"
    keep = tmp_path / "keep.sqlite"
    shutil.copyfile(live, keep)

    # 1. Rolled back to the older copy (a valid ledger, just shorter).
    shutil.copyfile(older, live)
    for result in _verify_both(home):
        assert result.returncode == 1, result.stdout + result.stderr
        assert "rolled back" in result.stdout
    # 2. Truncated tail: the last 3 entries removed.
    shutil.copyfile(keep, live)
    _delete_rows(live, "n > (SELECT max(n) - 3 FROM entries)")
    for result in _verify_both(home):
        assert result.returncode == 1 and "rolled back" in result.stdout, result.stdout
    # 3. An empty ledger with the same id.
    live.unlink()
    Ledger.open(live, create=True, ledger_id=ledger_id).close()
    for result in _verify_both(home):
        assert result.returncode == 1 and "rolled back" in result.stdout, result.stdout
    # The real ledger put back verifies again: nothing was a false alarm.
    shutil.copyfile(keep, live)
    assert exo(home, "ledger", "verify").returncode == 0


def test_entries_after_the_last_checkpoint_cannot_be_dropped(home: Path, tmp_path: Path) -> None:
    exported = exo(home, "store", "export", str(tmp_path / "copy"))  # writes a checkpoint into the book
    assert exported.returncode == 0, exported.stderr
    _ingest(home, tmp_path, "after", 5)
    ok = exo(home, "ledger", "verify")
    assert ok.returncode == 0 and "checkpoint(s) checked" in ok.stdout, ok.stdout
    _delete_rows(home / "store" / "ledger.sqlite", "n > (SELECT max(n) - 5 FROM entries)")
    bad = exo(home, "ledger", "verify")
    assert bad.returncode == 1 and "rolled back" in bad.stdout, bad.stdout


WRITER = r"""
import sys
from pathlib import Path
from exo_core.ledger import HomeWitness, Ledger, load_signing_key
db, home, tag = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
with Ledger.open(db, signer=load_signing_key(home / "keys"), witness=HomeWitness(home)) as ledger:
    for i in range(40):
        ledger.append("utterance", {"text": f"{tag}-{i}"})
"""


def test_seen_head_only_grows_with_concurrent_writers_and_names_a_swapped_ledger(tmp_path: Path) -> None:
    from exo_core.ledger import HomeWitness, MachineTrust, create_signing_key

    home = tmp_path / "home"
    signer = create_signing_key(home / "keys")
    db = tmp_path / "ledger.sqlite"
    Ledger.open(db, create=True, ledger_id="two-writers").close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(home), tag], cwd=ROOT) for tag in ("a", "b")]
    assert [p.wait(120) for p in procs] == [0, 0]
    trust = MachineTrust(home)
    seen = trust.seen_head(db)
    with Ledger.open(db) as ledger:
        assert seen is not None and seen.checkpoint.size == ledger.head(0).size == 80  # the highest, not the last
        assert ledger.verify(seen_heads=[seen.checkpoint]).ok
    # Another ledger put at the same path is named as a swap, and the record is not moved to it.
    db.unlink()
    with Ledger.open(db, signer=signer, create=True, ledger_id="impostor", witness=HomeWitness(home)) as ledger:
        ledger.append("utterance", {"text": "hello"})
        report = ledger.verify(seen_heads=[seen.checkpoint])
    assert not report.ok and "the ledger was replaced" in report.problems[0].reason
    assert trust.seen_head(db) == seen


def test_a_deliberate_restore_is_accepted_only_when_the_person_says_so(home: Path, tmp_path: Path) -> None:
    store = home / "store"
    older = tmp_path / "older.sqlite"
    with Ledger.open_store(store) as ledger, sqlite3.connect(older) as target:
        ledger.backup_to(target)
    _ingest(home, tmp_path, "later", 4)
    shutil.copyfile(older, store / "ledger.sqlite")
    assert exo(home, "ledger", "verify").returncode == 1
    forgot = exo(home, "store", "trust", "--forget-head")
    assert forgot.returncode == 0 and "forgot the head" in forgot.stdout, forgot.stderr
    assert exo(home, "ledger", "verify").returncode == 0
    _ingest(home, tmp_path, "after-restore", 2)  # and the record starts again from the restored copy
    _delete_rows(store / "ledger.sqlite", "n = (SELECT max(n) FROM entries)")
    assert exo(home, "ledger", "verify").returncode == 1


def test_exod_turns_are_witnessed_so_their_loss_is_caught(home: Path, tmp_path: Path) -> None:
    from exo_testkit import Exod, write_script

    from exo_core.ledger import MachineTrust

    script = write_script(tmp_path / "script.json", [{"text": "Noted."}])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    daemon = Exod(home, script, workspace).start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
        env.update({"EXO_HOME": str(home), "PYTHONPATH": str(ROOT)})
        said = subprocess.run(
            [sys.executable, "-m", "exo_core.cli", "chat", "--no-spawn", "--plain"],
            input="remember that I like tea\n",
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert said.returncode == 0, said.stderr
    finally:
        daemon.stop()
    ledger_path = home / "store" / "ledger.sqlite"
    seen = MachineTrust(home).seen_head(ledger_path)
    with Ledger.open(ledger_path) as ledger:
        texts = [e.body.get("text") for e in ledger.entries(kind="utterance")]
        assert "remember that I like tea" in texts
        assert seen is not None and seen.checkpoint.size == ledger.head(0).size  # exod's last write was recorded
    _delete_rows(ledger_path, "n = (SELECT max(n) FROM entries)")
    bad = exo(home, "ledger", "verify")
    assert bad.returncode == 1 and "rolled back" in bad.stdout, bad.stdout
