"""The update path: a new release beside the old, a verified store export, an atomic switch,
rollback on a failed health check; the store's bytes never change."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from imagekit import IMAGE, child_env, exo_command, exo_shim, write_exec
from test_image_firstboot import run_firstboot, tree_digest

UPDATE = IMAGE / "update.sh"


def curated(store: Path) -> dict[str, str]:
    """The store's curated files: everything but its SQLite databases and its machine state
    (``.exo/``, where an export records what the store held, as the base of a later sync)."""
    return {k: v for k, v in tree_digest(store).items() if not k.endswith(".sqlite") and not k.startswith(".exo/")}


def ledger_entries(store: Path) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{store / 'ledger.sqlite'}?mode=ro", uri=True)) as db:
        return db.execute("SELECT n, chain, sig FROM entries ORDER BY n").fetchall()


def assert_nothing_lost(store: Path, files: dict[str, str], entries: list[tuple[object, ...]]) -> None:
    """Curated files unchanged; the ledger only grew (an export appends a signed checkpoint)."""
    assert curated(store) == files
    after = ledger_entries(store)
    assert after[: len(entries)] == entries


def fake_release(dest: Path) -> None:
    """A release folder whose venv runs this checkout (building a real venv is the build's job)."""
    (dest / "src").mkdir(parents=True)
    shutil.copytree(IMAGE, dest / "src" / "image")
    exo_shim(dest / "venv" / "bin" / "exo")


@pytest.fixture
def device(tmp_path: Path) -> dict[str, Path]:
    prefix, state = tmp_path / "opt-exo", tmp_path / "var-lib-exo"
    fake_release(prefix / "releases" / "r1")
    for link, target in (("current", "releases/r1"), ("venv", "current/venv"), ("image", "current/src/image")):
        (prefix / link).symlink_to(target)
    assert run_firstboot(state, EXO_BIN=str(prefix / "venv" / "bin" / "exo")).returncode == 0
    shim = (prefix / "releases" / "r1" / "venv" / "bin" / "exo").read_text()
    builder = write_exec(
        tmp_path / "build-release",
        f'#!/bin/sh\nset -e\nmkdir -p "$2/src" "$2/venv/bin"\ncp -r "{IMAGE}" "$2/src/image"\n'
        f'cat > "$2/venv/bin/exo" <<\'SHIM\'\n{shim}SHIM\nchmod +x "$2/venv/bin/exo"\n',
    )
    systemctl = write_exec(tmp_path / "systemctl", f'#!/bin/sh\necho "$@" >> "{tmp_path / "systemctl.log"}"\n')
    return {"prefix": prefix, "state": state, "builder": builder, "systemctl": systemctl, "tmp": tmp_path}


def run_update(device: dict[str, Path], health: str) -> subprocess.CompletedProcess[str]:
    env = child_env(
        EXO_PREFIX=str(device["prefix"]),
        EXO_STATE=str(device["state"]),
        EXO_SYSTEMCTL=str(device["systemctl"]),
        EXO_BUILD_RELEASE=str(device["builder"]),
        EXO_HEALTH_CMD=health,
        EXO_FETCH_MODELS="0",
    )
    return subprocess.run(
        ["bash", str(UPDATE), str(IMAGE.parent)], env=env, capture_output=True, text=True, timeout=180
    )


def test_update_switches_release_and_keeps_a_verified_store_copy(device: dict[str, Path]) -> None:
    store = device["state"] / "store"
    files, entries = curated(store), ledger_entries(store)
    done = run_update(device, "true")
    assert done.returncode == 0, done.stderr
    current = (device["prefix"] / "current").resolve()
    assert current.parent.name == "releases" and current.name != "r1"
    assert (device["prefix"] / "venv" / "bin" / "exo").resolve().is_relative_to(current)
    assert_nothing_lost(store, files, entries)
    backups = list((device["state"] / "backups").iterdir())
    assert len(backups) == 1
    verify = subprocess.run(
        [*exo_command().split(), "store", "verify", str(backups[0])],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    calls = (device["tmp"] / "systemctl.log").read_text().splitlines()
    assert calls[0].startswith("stop ") and calls[-1].startswith("start exod.service")


def test_a_release_that_fails_its_health_check_is_rolled_back(device: dict[str, Path]) -> None:
    store = device["state"] / "store"
    files, entries = curated(store), ledger_entries(store)
    done = run_update(device, "false")
    assert done.returncode == 1
    assert "rolling back to r1" in done.stderr
    assert (device["prefix"] / "current").resolve().name == "r1"
    assert_nothing_lost(store, files, entries)
    calls = (device["tmp"] / "systemctl.log").read_text().splitlines()
    assert calls[-1] == "start exod.service exo-device.service"
