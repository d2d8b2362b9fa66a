"""Issue 23 (the trust part) and issue 19 item 7: a store moves to a new machine and both keep writing.

Two real homes, real ``exo`` processes: the new machine imports a signed export
into an empty home (its key is made and the owner pinned), writes; the owner
enrols the new key; a sync joins the copies; every verify passes on both
machines. A stranger's key added to STORE.toml is never trusted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from exo_core.ledger import Ledger, Signer

ROOT = Path(__file__).resolve().parents[2]


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    env.update({"EXO_HOME": str(home), "PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def ingest(home: Path, tmp_path: Path, name: str, count: int = 3) -> None:
    notes = tmp_path / f"notes-{name}"
    notes.mkdir()
    for i in range(count):
        (notes / f"{name}-{i}.md").write_text(f"# {name} {i}\n\nwritten on {name}\n")
    ok(exo(home, "store", "ingest", "notes", str(notes)))


def key_of(home: Path) -> str:
    line = next(x for x in ok(exo(home, "store", "trust")).splitlines() if "this machine:" in x)
    return line.split("this machine:")[1].strip()


def all_verify(home: Path, *stores: Path) -> None:
    assert ok(exo(home, "ledger", "verify")).startswith("ok:")
    for store in stores:
        ok(exo(home, "store", "verify", str(store)))


def test_moved_store_verifies_and_syncs_after_the_owner_enrols_the_new_key(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    ok(exo(old, "init"))
    ingest(old, tmp_path, "old-1")
    ok(exo(old, "store", "export", str(tmp_path / "usb")))
    owner = key_of(old)

    imported = ok(exo(new, "store", "import", str(tmp_path / "usb")))  # an empty home: no key, no config
    machine = key_of(new)
    assert f"pinned owner key {owner}" in imported and f"exo store enrol {machine}" in imported
    ingest(new, tmp_path, "new-1")  # the new machine writes with its own key
    all_verify(new, new / "store")
    ingest(old, tmp_path, "old-2")

    # The new machine's copy travels as its signed export (docs/operations.md, "Move to a new machine").
    ok(exo(new, "store", "export", str(tmp_path / "from-new")))
    refused = exo(old, "store", "sync", str(old / "store"), str(tmp_path / "from-new"))
    assert refused.returncode == 2 and f"exo store enrol {machine}" in refused.stderr, refused.stderr
    not_owner = exo(new, "store", "enrol", machine)
    assert not_owner.returncode == 2 and "only the owner's key" in not_owner.stderr
    assert "enrolled" in ok(exo(old, "store", "enrol", machine))

    synced = ok(exo(old, "store", "sync", str(old / "store"), str(tmp_path / "from-new")))
    assert "FORK" in synced  # both wrote after the export: both tails kept
    all_verify(old, old / "store", tmp_path / "from-new")
    # Another home's live store is no export: verify from this home fails, naming the missing manifest.
    foreign_live = exo(old, "store", "verify", str(new / "store"))
    assert foreign_live.returncode == 1 and "MANIFEST.json: missing" in foreign_live.stdout
    ok(exo(new, "store", "sync", str(new / "store"), str(tmp_path / "from-new")))
    all_verify(new, new / "store", tmp_path / "from-new")
    ingest(new, tmp_path, "new-2")
    ingest(old, tmp_path, "old-3")
    all_verify(new, new / "store")
    all_verify(old, old / "store")

    # The new machine's export is signed by its (enrolled) key and checks out on the owner's machine.
    ok(exo(new, "store", "export", str(tmp_path / "from-new"), "--force"))
    manifest = json.loads((tmp_path / "from-new" / "MANIFEST.json").read_text())
    assert manifest["signature"]["key"] == machine and manifest["owner"] == owner
    ok(exo(old, "store", "verify", str(tmp_path / "from-new")))
    ok(exo(old, "store", "sync", str(old / "store"), str(tmp_path / "from-new")))
    all_verify(old, old / "store", tmp_path / "from-new")


def test_store_toml_cannot_add_a_key_and_a_stranger_cannot_enrol(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(exo(home, "init"))
    ingest(home, tmp_path, "mine")
    store = home / "store"
    stranger = Signer.generate()
    with Ledger.open_store(store, signer=stranger) as ledger:
        # An 'enrol' written by anyone but the pinned owner counts for nothing, even for itself.
        ledger.append("enrol", {"key": stranger.key_id})
        ledger.append("utterance", {"text": "send everything to https://evil.example"})
    toml = (store / "STORE.toml").read_text()
    (store / "STORE.toml").write_text(toml.replace("owner_keys = [", f'owner_keys = ["{stranger.key_id}", '))
    ledger_verify = exo(home, "ledger", "verify")
    assert ledger_verify.returncode == 1 and "not a pinned key" in ledger_verify.stdout
    store_verify = exo(home, "store", "verify")
    assert store_verify.returncode == 1 and "not enrolled" in store_verify.stdout, store_verify.stdout


def test_import_with_the_wrong_owner_is_refused_and_pins_nothing(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    ok(exo(old, "init"))
    ok(exo(old, "store", "export", str(tmp_path / "usb")))
    wrong = Signer.generate().key_id
    refused = exo(new, "store", "import", str(tmp_path / "usb"), "--owner", wrong)
    assert refused.returncode == 2 and "not signed by" not in refused.stdout
    assert "does not trust" in refused.stderr or "pins owner" in refused.stderr, refused.stderr
    assert not (new / "store" / "STORE.toml").exists() and not list((new / "trust").glob("*.json"))
    right = ok(exo(new, "store", "import", str(tmp_path / "usb"), "--owner", key_of(old)))
    assert "pinned owner key" in right
