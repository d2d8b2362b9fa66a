"""Copies converge: a move-and-sync round trip with edits on both sides, through real commands.

Two homes (the owner's machine and a new one), real ``exo`` processes. Both
copies record a different city for the sister; the sync reports the conflict
and keeps both; ``exo store resolve`` settles it (recorded in the ledger);
the next syncs carry the choice to the other copy. Then verify passes on both
sides and a further sync is quiet and writes nothing, not even a checkpoint.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from exo_testkit import Exod, write_script

from exo_core.client.client import ExoClient
from exo_core.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]

SISTER = """---
id: people/sister
title: Sister
type: entity
domain: people
summary: "The person's sister, {city}."
load_when: sister
confidence: high
stability: durable
valid_from: 2025-01-01
sources:
  - onboarding
links: []
---

She lives in {city}.
"""


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    env.update({"EXO_HOME": str(home), "PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def write_sister(store: Path, city: str) -> None:
    (store / "people").mkdir(exist_ok=True)
    (store / "people" / "sister.md").write_text(SISTER.format(city=city))


def ingest(home: Path, tmp_path: Path, name: str) -> None:
    notes = tmp_path / f"notes-{name}"
    notes.mkdir()
    (notes / f"{name}.md").write_text(f"# {name}\n\nwritten on {name}\n")
    ok(exo(home, "store", "ingest", "notes", str(notes)))


def key_of(home: Path) -> str:
    line = next(x for x in ok(exo(home, "store", "trust")).splitlines() if "this machine:" in x)
    return line.split("this machine:")[1].strip()


def snapshot(*roots: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and modification time under ``roots``: a write of any kind shows."""
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns) for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


async def first_notice(home: Path, tmp_path: Path) -> str:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    daemon = Exod(home, write_script(tmp_path / "script.json", []), workspace).start()
    try:
        async with ExoClient(daemon.url) as client:
            async with asyncio.timeout(60):
                async for event in client.events(since=0):
                    if event.type == "notice":
                        return str(event.body["text"])
    finally:
        daemon.stop()
    raise AssertionError("no notice")


def verify_all(home: Path, *stores: Path) -> None:
    assert ok(exo(home, "ledger", "verify")).startswith("ok:")
    for store in stores:
        out = ok(exo(home, "store", "verify", str(store)))
        assert "error" not in out, out


def test_two_used_copies_converge_after_resolve_and_a_second_sync_writes_nothing(tmp_path: Path) -> None:
    old, new, usb = tmp_path / "old", tmp_path / "new", tmp_path / "usb"
    ok(exo(old, "init"))
    write_sister(old / "store", "Lyon")
    ok(exo(old, "store", "export", str(tmp_path / "first")))
    ok(exo(new, "store", "import", str(tmp_path / "first")))
    ok(exo(old, "store", "enrol", key_of(new)))

    # Both copies are used: each records a different city and writes to its ledger.
    write_sister(old / "store", "Porto")
    write_sister(new / "store", "Lisbon")
    (new / "store" / "people" / "cousin.md").write_text(
        SISTER.replace("people/sister", "people/cousin").replace("Sister", "Cousin").format(city="Oslo")
    )
    ingest(old, tmp_path, "old-1")
    ingest(new, tmp_path, "new-1")

    ok(exo(new, "store", "export", str(usb)))
    first = ok(exo(old, "store", "sync", str(old / "store"), str(usb)))
    assert "CONFLICT people/sister.md: changed in both copies" in first, first
    assert "STORE.toml owner keys merged" in first and "CONFLICT STORE.toml" not in first, first
    assert "people/cousin.md copied B -> A" in first, first
    assert "Porto" in (old / "store" / "people" / "sister.md").read_text()  # each copy kept its own
    assert "Lisbon" in (usb / "people" / "sister.md").read_text()
    verify_all(old, old / "store", usb)  # the synced export was re-signed: it verifies

    # Every screen is told: exod started on the copy with the open conflict emits a notice naming it.
    told = asyncio.run(first_notice(old, tmp_path))
    assert "1 sync conflict(s) open in the store: people/sister.md" in told and "exo store resolve" in told, told

    listed = ok(exo(old, "store", "resolve"))
    assert "people/sister.md: open since sync" in listed and "1 open conflict(s)" in listed, listed
    refused = exo(old, "store", "resolve", "people/cousin.md", "--keep", "mine")
    assert refused.returncode == 2 and "no open sync conflict" in refused.stderr
    # Lisbon (the other copy's) is current; Porto is kept as the belief it superseded.
    resolved = ok(exo(old, "store", "resolve", "people/sister.md", "--keep", "both", "--current", "theirs"))
    assert "resolved people/sister.md" in resolved, resolved
    sister = (old / "store" / "people" / "sister.md").read_text()
    assert "Lisbon" in sister and "supersedes [[people/sister-was-" in sister, sister
    history = list((old / "store" / "people").glob("sister-was-*.md"))
    assert len(history) == 1 and "Porto" in history[0].read_text() and "valid_until:" in history[0].read_text()
    assert "0 open conflict(s)" in ok(exo(old, "store", "resolve"))
    ok(exo(old, "store", "lint"))

    second = ok(exo(old, "store", "sync", str(old / "store"), str(usb)))
    assert "people/sister.md copied A -> B" in second and "CONFLICT" not in second, second
    third = ok(exo(new, "store", "sync", str(new / "store"), str(usb)))
    assert "people/sister.md copied B -> A" in third and "CONFLICT" not in third, third
    # The owner's machine picks up the new machine's record of that sync (a checkpoint entry) and
    # records none of its own for it, so the three copies stop there.
    fourth = ok(exo(old, "store", "sync", str(old / "store"), str(usb)))
    assert "1 entries into A, 0 into B" in fourth and "copied" not in fourth, fourth

    # Converged: the same curated files and the same ledger entries on every copy.
    for store in (old / "store", new / "store", usb):
        assert "Lisbon" in (store / "people" / "sister.md").read_text()
        assert "Porto" in next((store / "people").glob("sister-was-*.md")).read_text()
        assert "Oslo" in (store / "people" / "cousin.md").read_text()
        with Ledger.open(store / "ledger.sqlite") as ledger:
            resolutions = list(ledger.entries(kind="resolve"))
            assert [e.body["keep"] for e in resolutions] == ["both"]
    verify_all(old, old / "store", usb)
    verify_all(new, new / "store", usb)

    # A second sync of converged copies is quiet and writes nothing: no file, no checkpoint, no log.
    before = snapshot(old, new, usb)
    with Ledger.open(old / "store" / "ledger.sqlite") as ledger:
        entries = ledger.count()
    for home in (old, new):
        again = ok(exo(home, "store", "sync", str(home / "store"), str(usb)))
        assert "already in sync: nothing to move, nothing written" in again, again
    assert snapshot(old, new, usb) == before
    with Ledger.open(old / "store" / "ledger.sqlite") as ledger:
        assert ledger.count() == entries
