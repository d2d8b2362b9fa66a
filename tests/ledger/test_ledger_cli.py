"""``exo ledger verify|log|show|rebuild`` as real ``python -m exo_core.cli`` subprocesses."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from exo_core.ledger import CheckpointBook, Ledger, Signer, record_checkpoint
from exo_core.ledger.checkpoint import BOOK_FILE_NAME

ROOT = Path(__file__).resolve().parents[2]


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXO_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def store(tmp_path: Path, signer: Signer) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    with Ledger.open_store(store, signer=signer, create=True, ledger_id="cli") as ledger:
        said = ledger.append("utterance", {"text": "hello"})
        ledger.append("action", {"tool": "bash", "outcome": "allow"}, refs=[said.id], scope="agent:coder")
        ledger.append("verdict", {"verdict": "accept", "judged": said.id}, refs=[said.id])
    return store


def test_verify_ok_and_default_store(tmp_path: Path, store: Path) -> None:
    home = tmp_path / "home"
    result = exo(home, "ledger", "verify", "--store", str(store))
    assert result.returncode == 0, result.stderr
    assert "ok: ledger cli: 3 entries" in result.stdout
    home.mkdir()
    (home / "config.toml").write_text(f'store = "{store}"\n')
    result = exo(home, "ledger", "verify", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["entries"] == 3


def test_verify_names_the_first_bad_entry(tmp_path: Path, store: Path) -> None:
    raw = sqlite3.connect(store / "ledger.sqlite")
    raw.executescript(
        "DROP TRIGGER entries_no_update; UPDATE entries SET content = "
        "CAST(replace(content, 'bash', 'rm -rf') AS BLOB) WHERE n = 2;"
    )
    raw.close()
    result = exo(tmp_path / "home", "ledger", "verify", "--store", str(store))
    assert result.returncode == 1
    assert "trigger entries_no_update is missing" in result.stdout
    result = exo(tmp_path / "home", "ledger", "verify", "--store", str(store), "--json")
    problems = json.loads(result.stdout)["problems"]
    assert [p["n"] for p in problems] == [None, 2] and "id does not match" in problems[1]["reason"]


def test_verify_uses_the_machine_checkpoint_book_and_pins(tmp_path: Path, store: Path, signer: Signer) -> None:
    home = tmp_path / "home"
    home.mkdir()
    book = CheckpointBook(home / BOOK_FILE_NAME)
    with Ledger.open_store(store, signer=signer) as ledger:
        record_checkpoint(ledger, book=book)
    book.close()
    assert "1 checkpoint(s)" in exo(home, "ledger", "verify", "--store", str(store)).stdout
    raw = sqlite3.connect(store / "ledger.sqlite")
    raw.executescript(
        "DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE n = 4; CREATE TRIGGER "
        "entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'no'); END;"
    )
    raw.close()
    result = exo(home, "ledger", "verify", "--store", str(store))
    assert result.returncode == 1 and "tail was dropped" in result.stdout
    assert exo(home, "ledger", "verify", "--store", str(store), "--no-checkpoints").returncode == 0
    other = Signer.generate().key_id
    assert exo(home, "ledger", "verify", "--store", str(store), "--no-checkpoints", "--pin", other).returncode == 1
    assert (
        exo(home, "ledger", "verify", "--store", str(store), "--no-checkpoints", "--pin", signer.key_id).returncode == 0
    )
    bad_pin = exo(home, "ledger", "verify", "--store", str(store), "--pin", "nope")
    assert bad_pin.returncode == 2 and "not a key id" in bad_pin.stderr


def test_log_filters_and_show(tmp_path: Path, store: Path) -> None:
    home = tmp_path / "home"
    lines = exo(home, "ledger", "log", "--store", str(store)).stdout.splitlines()
    assert len(lines) == 3 and "utterance" in lines[0] and '{"text":' in lines[0]
    only = exo(home, "ledger", "log", "--store", str(store), "--kind", "action", "--json").stdout.splitlines()
    assert [json.loads(x)["kind"] for x in only] == ["action"]
    scoped = exo(home, "ledger", "log", "--store", str(store), "--scope", "agent:coder").stdout.splitlines()
    assert len(scoped) == 1
    assert exo(home, "ledger", "log", "--store", str(store), "--since", "2999-01-01").stdout == ""
    assert (
        len(
            exo(
                home, "ledger", "log", "--store", str(store), "--until", "2999-01-01T00:00+02:00", "--limit", "2"
            ).stdout.splitlines()
        )
        == 2
    )
    entry_id = json.loads(only[0])["id"]
    shown = json.loads(exo(home, "ledger", "show", entry_id[:10], "--store", str(store)).stdout)
    assert shown["id"] == entry_id and shown["body"] == {"tool": "bash", "outcome": "allow"}


def test_log_tail_and_reverse(tmp_path: Path, store: Path) -> None:
    home = tmp_path / "home"

    def kinds(*extra: str) -> list[str]:
        out = exo(home, "ledger", "log", "--store", str(store), "--json", *extra).stdout.splitlines()
        return [json.loads(x)["kind"] for x in out]

    assert kinds() == ["utterance", "action", "verdict"]
    assert kinds("--tail", "2") == ["action", "verdict"]
    assert kinds("--reverse") == ["verdict", "action", "utterance"]
    assert kinds("--tail", "2", "--reverse") == ["verdict", "action"]
    assert kinds("--tail", "0") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["log", "--tail", "-3"], "--tail"),
        (["log", "--kind", "gossip"], "unknown ledger entry kind"),
        (["log", "--scope", "Boss"], "bad scope"),
        (["log", "--since", "yesterday"], "--since"),
        (["log", "--limit", "-1"], "--limit"),
        (["show", "zzzz"], "not an entry id"),
        (["show", "abcdef0123"], "no ledger entry"),
    ],
)
def test_bad_input_is_a_typed_error(tmp_path: Path, store: Path, args: list[str], message: str) -> None:
    result = exo(tmp_path / "home", "ledger", *args, "--store", str(store))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_missing_store(tmp_path: Path) -> None:
    result = exo(tmp_path / "home", "ledger", "verify", "--store", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "no ledger at" in result.stderr


def test_rebuild(tmp_path: Path, store: Path) -> None:
    home = tmp_path / "home"
    result = exo(home, "ledger", "rebuild", "--store", str(store))
    assert result.returncode == 0, result.stderr
    views = store / "indexes" / "ledger"
    first = {p.name: p.read_bytes() for p in views.iterdir()}
    assert set(first) == {"kind_summary.json", "ref_index.json", "taste.json", "taste_pack.json"}  # + learning views
    for path in views.iterdir():
        path.unlink()
    assert exo(home, "ledger", "rebuild", "--store", str(store)).returncode == 0
    assert {p.name: p.read_bytes() for p in views.iterdir()} == first
    assert exo(home, "ledger", "rebuild", "--store", str(store), "--view", "nope").returncode == 2


def test_verify_pins_store_toml_owner_keys_by_default(
    tmp_path: Path,
    store: Path,
    signer: Signer,
    other_signer: Signer,
) -> None:
    home = tmp_path / "home"
    (store / "STORE.toml").write_text(f'format = 2\nkind = "person"\nowner_keys = ["{signer.key_id}"]\n')
    ok = exo(home, "ledger", "verify", "--store", str(store))
    assert ok.returncode == 0 and "1 pinned key(s)" in ok.stdout, ok.stderr
    with Ledger.open_store(store, signer=other_signer) as ledger:
        ledger.append("utterance", {"text": "a stranger's words"})
    bad = exo(home, "ledger", "verify", "--store", str(store))
    assert bad.returncode == 1 and "not a pinned key" in bad.stdout
    assert exo(home, "ledger", "verify", "--store", str(store), "--no-pins").returncode == 0
    (store / "STORE.toml").write_text("format = [not toml\n")
    unreadable = exo(home, "ledger", "verify", "--store", str(store))
    assert unreadable.returncode == 0 and "authors not pinned" in unreadable.stderr
