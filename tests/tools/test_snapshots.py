"""What the file tools replace is kept per turn (0700/0600, bounded) and put back byte for byte."""

from __future__ import annotations

import stat
from pathlib import Path

from exo_core.tools.snapshots import FileSnapshots


def test_undo_puts_back_the_first_state_of_each_file_and_removes_created_ones(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    kept_file, made = ws / "a.txt", ws / "new.txt"
    kept_file.write_bytes(b"one\r\ntwo\x00\n")
    kept_file.chmod(0o604)
    snaps = FileSnapshots(tmp_path / "home" / "snapshots")
    assert snaps.keep("s1", "t1", [kept_file, made]).kept == (str(kept_file), str(made))
    kept_file.write_bytes(b"changed")
    assert snaps.keep("s1", "t2", [kept_file]).kept == (str(kept_file),)
    kept_file.write_bytes(b"changed again")
    snaps.keep("s1", "t2", [kept_file])  # a second write in the same turn keeps nothing more
    made.write_text("made by t1")
    for path in snaps.root.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600)
    done = snaps.restore("s1", ["t2", "t1"])
    assert kept_file.read_bytes() == b"one\r\ntwo\x00\n" and stat.S_IMODE(kept_file.stat().st_mode) == 0o604
    assert not made.exists() and done.removed == [str(made)] and done.restored == [str(kept_file)]
    assert snaps.restore("s1", ["t2", "t1"]).describe() == "no files were changed"


def test_large_files_are_not_kept_and_old_turns_are_dropped(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2048)
    snaps = FileSnapshots(tmp_path / "snapshots", max_file_bytes=1024, max_turns=3)
    kept = snaps.keep("s1", "t0", [big])
    assert kept.kept == () and "larger than 1024 bytes" in kept.not_kept[0][1]
    small = tmp_path / "small.txt"
    small.write_text("x")
    for n in range(1, 6):
        snaps.keep("s1", f"t{n}", [small])
    assert len(list((snaps.root / "s1").iterdir())) == 3


def test_a_file_swapped_for_a_link_is_not_written_through(tmp_path: Path) -> None:
    target, elsewhere = tmp_path / "a.txt", tmp_path / "elsewhere.txt"
    target.write_text("mine")
    elsewhere.write_text("theirs")
    snaps = FileSnapshots(tmp_path / "snapshots")
    snaps.keep("s1", "t1", [target])
    target.unlink()
    target.symlink_to(elsewhere)
    done = snaps.restore("s1", ["t1"])
    assert elsewhere.read_text() == "theirs" and done.failed and "symbolic link" in done.failed[0][1]
