"""Syncing two copies: all entries of both survive, forks are explicit segments and are reported."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from exo_core.errors import ConflictError, CorruptDataError
from exo_core.ledger import (
    CheckpointBook,
    Ledger,
    Signer,
    common_prefix,
    forks,
    import_entries,
    sync_ledgers,
)

from ledger_testkit import FakeClock

MakeLedger = Callable[..., Ledger]


def _copy(ledger: Ledger, dest: Path, signer: Signer) -> Ledger:
    shutil.copyfile(ledger.path, dest)
    return Ledger.open(dest, signer=signer, clock=FakeClock(start=1_790_000_000.0))


def _ids(ledger: Ledger) -> set[str]:
    return {e.id for e in ledger.entries()}


def test_fast_forward_is_not_a_fork(make_ledger: MakeLedger, tmp_path: Path, other_signer: Signer) -> None:
    home = make_ledger()
    for i in range(5):
        home.append("utterance", {"text": f"h{i}"})
    device = _copy(home, tmp_path / "device.sqlite", other_signer)
    for i in range(3):
        device.append("utterance", {"text": f"d{i}"})
    report = sync_ledgers(home, device, record=False)
    assert report.fork is None
    assert report.into_local.imported == 3 and report.into_local.extended == (0,)
    assert report.into_foreign.imported == 0
    assert home.head() == device.head() and forks(home) == [] and forks(device) == []
    assert home.verify().ok and device.verify().ok
    device.close()


def test_fork_keeps_everything_and_reports_both_checkpoints(
    make_ledger: MakeLedger,
    tmp_path: Path,
    signer: Signer,
    other_signer: Signer,
) -> None:
    home = make_ledger()
    for i in range(4):
        home.append("utterance", {"text": f"shared{i}"})
    device = _copy(home, tmp_path / "device.sqlite", other_signer)
    home_only = [home.append("utterance", {"text": f"home{i}"}).id for i in range(3)]
    dev_only = [device.append("utterance", {"text": f"device{i}"}).id for i in range(2)]
    judged = device.append("verdict", {"verdict": "accept", "judged": dev_only[0]}, refs=[dev_only[0]])
    before_home, before_dev = _ids(home), _ids(device)
    book = CheckpointBook(tmp_path / "book.sqlite")

    report = sync_ledgers(home, device, book=book, local_origin="home", foreign_origin="device")

    assert report.fork is not None
    assert report.fork.base.size == 4
    assert report.fork.local.head == report.local_before.head != report.fork.foreign.head
    assert report.fork.local.signature_ok() and report.fork.foreign.signature_ok()
    assert report.fork.local.size == 7 and report.fork.foreign.size == 7
    # every entry of both copies is in both, and nothing was rewritten
    assert before_home | before_dev <= _ids(home) and _ids(home) == _ids(device)
    for entry_id in [*home_only, *dev_only, judged.id]:
        a, b = home.get(entry_id), device.get(entry_id)
        assert (a.content, a.prev, a.chain, a.sig) == (b.content, b.prev, b.chain, b.sig)
    # the fork is explicit: a segment branching at height 4 in each copy
    (home_fork,) = forks(home)
    assert (home_fork.base_seg, home_fork.base_pos, home_fork.origin) == (0, 4, "device")
    assert home_fork.head.chain == report.fork.foreign.head
    (device_fork,) = forks(device)
    assert device_fork.base_pos == 4 and device_fork.origin == "home"
    # mains are untouched histories (plus the sync's own checkpoint entry on home)
    assert home.chain_at(0, 7) == report.fork.local.head and device.head() == home_fork.head
    assert home.verify(pins=[signer.key_id, other_signer.key_id]).ok
    assert device.verify(pins=[signer.key_id, other_signer.key_id]).ok
    # both kept checkpoints still hold in both copies
    kept = book.for_ledger(home.ledger_id)
    assert len(kept) == 3 and home.verify(checkpoints=kept).ok and device.verify(checkpoints=kept).ok
    assert common_prefix(home, device).size == 4

    # syncing again is a no-op; new work on each side extends the existing segments
    again = sync_ledgers(home, device, record=False)
    assert again.into_local.imported == 0 and again.into_foreign.imported == 0
    device.append("utterance", {"text": "later on the device"})
    third = sync_ledgers(home, device, record=False)
    assert third.into_local.imported == 1 and third.into_local.extended == (home_fork.seg,)
    assert third.into_local.new_segments == () and len(forks(home)) == 1
    assert home.verify().ok and device.verify().ok
    book.close()
    device.close()


def test_three_copies_converge(make_ledger: MakeLedger, tmp_path: Path, other_signer: Signer) -> None:
    a = make_ledger()
    a.append("utterance", {"text": "root"})
    b = _copy(a, tmp_path / "b.sqlite", other_signer)
    c = _copy(a, tmp_path / "c.sqlite", Signer.generate())
    for name, ledger in (("a", a), ("b", b), ("c", c)):
        ledger.append("utterance", {"text": f"only {name}"})
    sync_ledgers(a, b)
    sync_ledgers(b, c)
    sync_ledgers(a, b)
    sync_ledgers(c, a)
    sync_ledgers(a, b, record=False)  # carry c's sync checkpoint on to b as well
    assert _ids(a) == _ids(b) == _ids(c)
    for ledger in (a, b, c):
        assert ledger.verify().ok
    b.close()
    c.close()


def test_refuses_other_ledgers_and_corrupt_copies(make_ledger: MakeLedger, tmp_path: Path) -> None:
    a = make_ledger()
    a.append("utterance", {"text": "x"})
    other = make_ledger("other.sqlite", ledger_id="someone-else")
    with pytest.raises(ConflictError, match="different ledgers"):
        sync_ledgers(a, other)
    b = _copy(a, tmp_path / "b.sqlite", Signer.generate())
    b.append("utterance", {"text": "y"})
    pins = [a.signer.key_id]  # type: ignore[union-attr]
    with pytest.raises(CorruptDataError, match="not a pinned key"):
        sync_ledgers(a, b, pins=pins)
    assert a.count() == 1  # nothing moved
    b.close()


def test_import_refuses_tampered_or_orphaned_entries(make_ledger: MakeLedger, tmp_path: Path) -> None:
    import dataclasses

    a = make_ledger()
    first = a.append("utterance", {"text": "one"})
    second = a.append("utterance", {"text": "two"})
    b = make_ledger("b.sqlite")
    with pytest.raises(CorruptDataError, match="does not hold"):
        import_entries(b, [second], origin="a")  # its prev is not in b
    forged = dataclasses.replace(first, content=first.content.replace(b"one", b"0ne"))
    with pytest.raises(CorruptDataError, match="refused"):
        import_entries(b, [forged], origin="a")
    relabelled = dataclasses.replace(first, kind="rule")  # column disagrees with the signed content
    with pytest.raises(CorruptDataError, match="disagree"):
        import_entries(b, [relabelled], origin="a")
    assert b.count() == 0
    assert import_entries(b, a.entries(), origin="a").imported == 2 and b.verify().ok


def test_snapshot_of_a_live_ledger(make_ledger: MakeLedger, tmp_path: Path) -> None:
    from exo_core.ledger import snapshot_ledger

    ledger = make_ledger()
    for i in range(20):
        ledger.append("utterance", {"text": f"m{i}"})
    (tmp_path / "export").mkdir()
    dest = snapshot_ledger(ledger, tmp_path / "export" / "ledger.sqlite")
    with Ledger.open(dest) as copy:
        assert copy.verify().ok and copy.head() == ledger.head() and copy.ledger_id == ledger.ledger_id
    with pytest.raises(ConflictError):
        snapshot_ledger(ledger, dest)
