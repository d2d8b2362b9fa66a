"""Format migrations: fixture stores of every format open without loss, a crash at
any step is finished by the next open, and a newer store is refused."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from exo_core.store import CURRENT_FORMAT, Link, Store, StoreVersionError
from exo_core.store.lint import lint_store
from exo_core.store.frontmatter import parse_document
from exo_core.store.migrate import JOURNAL

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "stores"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _copy(version: str, tmp_path: Path) -> Path:
    dest = tmp_path / version
    shutil.copytree(FIXTURES / version, dest)
    return dest


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".exo" not in p.relative_to(root).parts
    }


def test_every_fixture_format_is_present() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == [f"v{n}" for n in range(1, CURRENT_FORMAT + 1)]


def test_current_fixture_opens_unchanged(tmp_path: Path) -> None:
    root = _copy(f"v{CURRENT_FORMAT}", tmp_path)
    before = _snapshot(root)
    store = Store.open(root)
    assert store.config.format == CURRENT_FORMAT
    assert _snapshot(root) == before
    assert lint_store(root).clean


def test_v1_migrates_without_loss(tmp_path: Path) -> None:
    root = _copy("v1", tmp_path)
    old = {
        p.relative_to(root).as_posix(): parse_document(p.read_text(), path=p).values
        for p in root.rglob("*.md")
        if p.parent != root and p.name != "INDEX.md"
    }
    store = Store.open(root)
    assert store.config.format == CURRENT_FORMAT and store.config.kind == "person"
    assert store.config.store_id.startswith("st_")
    assert lint_store(root).clean, [str(f) for f in lint_store(root).findings]
    nodes = {f"{n.id}.md": n for n in store.nodes()}
    assert set(nodes) == set(old)
    for rel, values in old.items():
        node = nodes[rel]
        assert node.title == values["title"] and node.summary == values["summary"]
        assert node.valid_from == values["valid_from"] and node.valid_until == values.get("valid_until")
        assert node.private == (values.get("private") == "true")
        source = values.get("source")
        assert node.sources == (() if not source else (source,))
        assert [f"{l.type}:{l.target}" for l in node.links] == list(values.get("links") or [])
    revised = store.read_node("taste/commit-style-2")
    assert Link("supersedes", "taste/commit-style") in revised.links
    assert (root / ".exo" / "backup-format-1" / "taste" / "commit-style.md").read_bytes() == (
        FIXTURES / "v1" / "taste" / "commit-style.md"
    ).read_bytes()
    assert not (root / ".exo" / JOURNAL).exists()


def test_crash_at_every_migration_step_is_finished_by_next_open(tmp_path: Path) -> None:
    clean = _copy("v1", tmp_path / "clean")
    run = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("migrator.py")), str(clean), "-1"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    steps = run.stdout.split()
    assert steps[0] == "journal" and steps[-1] == "done" and any(s.startswith("node:") for s in steps)
    expected = _snapshot(clean)
    store_id_line = next(l for l in expected["STORE.toml"].decode().splitlines() if l.startswith("store_id"))
    for k in range(len(steps)):
        root = _copy("v1", tmp_path / f"k{k}")
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("migrator.py")), str(root), str(k)],
            env=ENV,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        store = Store.open(root)  # finishes the interrupted migration
        assert store.config.format == CURRENT_FORMAT
        got = _snapshot(root)
        # The store id is drawn once per migration (kept in the journal), so it
        # differs between the two runs; everything else is byte-identical.
        got_toml = got.pop("STORE.toml").decode()
        want = dict(expected)
        want_toml = want.pop("STORE.toml").decode()
        assert got == want, f"killed at step {k} ({steps[k]})"
        assert (
            got_toml.replace(next(l for l in got_toml.splitlines() if l.startswith("store_id")), store_id_line)
            == want_toml
        )
        assert lint_store(root).clean
    print(f"migration crash points tested: {len(steps)}")


def test_newer_store_is_refused_and_untouched(tmp_path: Path) -> None:
    root = _copy(f"v{CURRENT_FORMAT}", tmp_path)
    toml = root / "STORE.toml"
    toml.write_text(toml.read_text().replace(f"format = {CURRENT_FORMAT}", f"format = {CURRENT_FORMAT + 1}"))
    before = _snapshot(root)
    with pytest.raises(StoreVersionError) as info:
        Store.open(root)
    assert "newer" in str(info.value) and "upgrade Exo" in str(info.value) and "STORE.toml" in str(info.value)
    assert _snapshot(root) == before
