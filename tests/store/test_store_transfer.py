"""Export, import and verify; the interrupted copy; exporting a store being written."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exo_core.errors import ConflictError
from exo_core.ledger import Ledger, Signer
from exo_core.store import ItemStore, Link, Node, Store
from exo_core.store.lint import lint_store
from exo_core.store.transfer import export_store, import_store
from exo_core.store.verify import verify_store
from exo_core.store.ledger_bridge import checkpoint_hook, open_ledger
from store_fixtures import ledger, signer, store  # noqa: F401  (pytest fixtures)


REPO = Path(__file__).resolve().parents[2]
COPIER = Path(__file__).with_name("copier.py")
# The child must import this checkout's exo_core, not an installed one.
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
STRESS = os.environ.get("EXO_STRESS") == "1"
RANDOM_POINTS = 50 if STRESS else 10


def _populate(store: Store, ledger: Ledger, n_nodes: int = 20, n_entries: int = 150) -> None:
    for i in range(n_nodes):
        store.write_node(
            Node(
                id=f"work/topic-{i:02d}",
                title=f"Topic {i}",
                type="fact",
                domain="work",
                summary=f"Fact number {i} about the work domain.",
                load_when=f"topic {i}",
                confidence="medium",
                stability="durable",
                valid_from="2025-01-01",
                links=(Link("see-also", "work/INDEX"),),
                body="\n" + "Some prose. " * 200 + "\n",
            )
        )
    for i in range(n_entries):
        ledger.append("utterance", {"text": f"said thing {i} " + "x" * 200})
    with ItemStore(store.items_path, ledger) as items:
        from exo_core.store.items import Item

        for i in range(30):
            items.put(Item.new(source_kind="note", source_ref=f"n{i}.md", title=f"note {i}", body="text " * 100))


def test_fresh_store_verifies_with_nothing_to_report(store: Store, tmp_path: Path) -> None:
    assert lint_store(store.root).clean
    report = verify_store(store.root, live=True)
    assert report.clean, report.render()


def test_export_verify_import_round_trip(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    _populate(store, ledger, 3, 10)
    result = export_store(store.root, tmp_path / "copy", ledger_hook=checkpoint_hook(signer))
    report = verify_store(tmp_path / "copy")
    assert report.clean, report.render()
    assert report.manifest is not None and report.manifest.export_id == result.export_id
    assert "checkpoint" in result.ledger
    # The copy's ledger ends with the export's checkpoint entry.
    copy_ledger = Ledger.open(tmp_path / "copy" / "ledger.sqlite")
    assert list(copy_ledger.entries())[-1].kind == "checkpoint"
    copy_ledger.close()
    live = import_store(tmp_path / "copy", tmp_path / "machine2" / "store", owner_key_id="ed25519:" + "c" * 64)
    assert verify_store(live, live=True).clean
    assert Store.open(live).config.owner_keys[-1] == "ed25519:" + "c" * 64
    assert not (live / "MANIFEST.json").exists()
    with pytest.raises(ConflictError):
        import_store(tmp_path / "copy", live)  # never over an existing store


def test_verify_detects_tampering_and_truncation(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    _populate(store, ledger, 2, 5)
    export_store(store.root, tmp_path / "copy", ledger_hook=checkpoint_hook(signer))
    node = tmp_path / "copy" / "work" / "topic-00.md"
    node.write_text(node.read_text() + "tampered\n")
    report = verify_store(tmp_path / "copy")
    assert not report.ok and any("work/topic-00.md" in e for e in report.errors)
    with pytest.raises(ConflictError):
        export_store(store.root, tmp_path / "copy")  # a changed copy is never overwritten silently
    export_store(store.root, tmp_path / "copy", force=True)
    (tmp_path / "copy" / "extra.md").write_text("added later\n")
    assert any("extra.md" in e for e in verify_store(tmp_path / "copy").errors)


def test_export_while_a_writer_appends(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    """A process appends to the ledger throughout; every copy is consistent and verifies."""
    _populate(store, ledger, 2, 20)
    keys = tmp_path / "home" / "keys"
    writer = subprocess.Popen(
        [sys.executable, str(COPIER), str(store.root), "-", str(keys), "writer"],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "start"
        for i in range(3):
            time.sleep(0.2)
            export_store(store.root, tmp_path / f"live-copy-{i}", ledger_hook=checkpoint_hook(signer))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    sizes = []
    for i in range(3):
        report = verify_store(tmp_path / f"live-copy-{i}")
        assert report.ok, report.render()
        sizes.append(report.manifest.ledger["size"])  # type: ignore[union-attr]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0], "the writer was really writing during the copies"


def _copier(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(COPIER), *args], cwd=REPO, env=ENV, stdout=subprocess.PIPE, text=True)


def test_interrupted_copy_is_old_or_new(store: Store, ledger: Ledger, signer: Signer, tmp_path: Path) -> None:
    """SIGKILL the copier at every step boundary and at random moments: DEST is always
    one complete copy, old or new, and verify says which."""
    _populate(store, ledger)
    ledger.close()
    keys = tmp_path / "home" / "keys"
    dest = tmp_path / "dest"
    base = [str(store.root), str(dest), str(keys)]
    first = _copier(base + ["steps"])
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0
    steps = [line for line in out.splitlines() if line not in ("start",) and not line.startswith("export ")]
    assert steps[-3:] == ["manifest", "swap", "done"] and len(steps) > 20
    seen_ids = {verify_store(dest).manifest.export_id}  # type: ignore[union-attr]
    outcomes = {"old": 0, "new": 0}

    def check_after_kill() -> None:
        report = verify_store(dest)
        assert report.ok, report.render()
        assert report.manifest is not None
        before = verify_prev[0]
        if report.manifest.export_id == before:
            outcomes["old"] += 1
        else:
            assert report.manifest.export_id not in seen_ids
            seen_ids.add(report.manifest.export_id)
            outcomes["new"] += 1
        verify_prev[0] = report.manifest.export_id
        assert "copy: export " + report.manifest.export_id in report.render()

    verify_prev = [next(iter(seen_ids))]
    for k in range(len(steps)):
        proc = _copier(base + ["kill-at", str(k)])
        proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL
        check_after_kill()
    # Random moments: the parent kills the copier after a random delay within
    # the measured length of one export.
    timing = _copier(base + ["run"])
    assert timing.stdout is not None and timing.stdout.readline().strip() == "start"
    t0 = time.monotonic()
    timing.communicate(timeout=120)
    duration = time.monotonic() - t0
    rng = random.Random(4)
    for _ in range(RANDOM_POINTS):
        proc = _copier(base + ["run"])
        assert proc.stdout is not None and proc.stdout.readline().strip() == "start"
        time.sleep(rng.uniform(0, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=120)
        check_after_kill()
    # Both outcomes happened: kills before the swap left the old copy, after it the new.
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    print(f"interrupted copy: {len(steps)} step boundaries + {RANDOM_POINTS} random kills; outcomes {outcomes}")
    # The next export cleans the staging folders killed copiers left behind.
    export_store(store.root, dest, ledger_hook=checkpoint_hook(signer))
    assert not list(tmp_path.glob(".dest.export-*"))
