"""``exo store`` end to end in child processes with a real Exo home and key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from exo_core.ledger import create_signing_key
from exo_core.store import init_store

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(__file__).with_name("exo_cli.py"))


def _exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "EXO_HOME": str(home)}
    return subprocess.run([sys.executable, CLI, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_store_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    signer = create_signing_key(home / "keys")
    store = init_store(home / "store", owner_key_ids=[signer.key_id])
    lint = _exo(home, "store", "lint")
    assert lint.returncode == 0 and lint.stdout.strip() == "0 error(s), 0 warning(s)", lint.stdout
    verify = _exo(home, "store", "verify")
    assert verify.returncode == 0 and "error" not in verify.stdout and "warning" not in verify.stdout, verify.stdout

    (tmp_path / "b.html").write_text(
        '<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><DT><A HREF="https://example.org/x" ADD_DATE="1">x</A></DL>\n'
    )
    (tmp_path / "chat.json").write_text(
        json.dumps({"conversations": [{"id": "c", "messages": [{"id": "1", "role": "user", "text": "hello"}]}]})
    )
    assert "added 1" in _exo(home, "store", "ingest", "bookmarks", str(tmp_path / "b.html")).stdout
    assert "utterances 1" in _exo(home, "store", "ingest", "chat", str(tmp_path / "chat.json")).stdout
    bad = _exo(home, "store", "ingest", "chat", str(tmp_path / "b.html"))
    assert bad.returncode == 2 and "b.html:1" in bad.stderr

    out = _exo(home, "store", "export", str(tmp_path / "copy"))
    assert out.returncode == 0, out.stderr
    checked = _exo(home, "store", "verify", str(tmp_path / "copy"))
    assert checked.returncode == 0 and "copy: export" in checked.stdout
    (store.root / "items.sqlite").unlink()
    assert "1 items" in _exo(home, "store", "rebuild-items").stdout

    home2 = tmp_path / "home2"
    create_signing_key(home2 / "keys")
    imported = _exo(home2, "store", "import", str(tmp_path / "copy"))
    assert imported.returncode == 0, imported.stderr
    again = _exo(home2, "store", "import", str(tmp_path / "copy"))
    assert again.returncode == 2 and "sync" in again.stderr
    # Another home's live store carries no manifest: nothing shows who wrote its files.
    refused = _exo(home, "store", "sync", str(store.root), str(home2 / "store"))
    assert refused.returncode == 2 and "MANIFEST.json: missing" in refused.stderr, refused.stderr
    synced = _exo(home, "store", "sync", str(store.root), str(tmp_path / "copy"))
    assert synced.returncode == 0 and "sync " in synced.stdout, synced.stderr

    (store.root / "pack.md").write_text("# Pack\n[[missing/node]]\n")
    failed = _exo(home, "store", "lint")
    assert failed.returncode == 1 and "pack.md:2: error [dangling-link]" in failed.stdout
    broken = _exo(home, "store", "verify", str(tmp_path / "nowhere"))
    assert broken.returncode == 1
