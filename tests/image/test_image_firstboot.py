"""The first-boot script, run for real in a scratch state folder (paths injected)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sqlite3
import subprocess
from pathlib import Path

from imagekit import IMAGE, child_env, exo_command

FIRSTBOOT = IMAGE / "firstboot.sh"


def run_firstboot(state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    values = {"EXO_STATE": str(state), "EXO_BIN": exo_command(), "EXO_FETCH_MODELS": "0", **env}
    return subprocess.run(
        ["bash", str(FIRSTBOOT)], env=child_env(**values), capture_output=True, text=True, timeout=120
    )


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file's sha256; SQLite databases by their content (a checkpoint may rewrite their pages)."""
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name.endswith(("-journal", "-wal", "-shm")):
            continue
        if path.suffix == ".sqlite":
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                data = "\n".join(db.iterdump()).encode()
        else:
            data = path.read_bytes()
        out[str(path.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    return out


def test_first_boot_makes_home_and_store_and_stamps(tmp_path: Path) -> None:
    state = tmp_path / "var-lib-exo"
    done = run_firstboot(state)
    assert done.returncode == 0, done.stderr
    home, store = state / "home", state / "store"
    assert (home / "config.toml").is_file() and (home / "keys").is_dir()
    assert (home / "workspace").is_dir()
    assert (store / "STORE.toml").is_file() and (store / "pack.md").is_file()
    assert f'store = "{store}"' in (home / "config.toml").read_text()
    for folder in (state, home, home / "keys", home / "run"):
        assert folder.stat().st_mode & 0o077 == 0, folder
    stamp = (state / ".firstboot-done").read_text()
    assert stamp.startswith("done ") and "models skipped" in stamp
    lint = subprocess.run(
        [*exo_command().split(), "store", "lint", str(store)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_first_boot_again_keeps_the_store_and_key(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert run_firstboot(state).returncode == 0
    (state / "store" / "work" / "INDEX.md").write_text((state / "store" / "work" / "INDEX.md").read_text() + "\n")
    before_store, before_keys = tree_digest(state / "store"), tree_digest(state / "home" / "keys")
    done = run_firstboot(state)
    assert done.returncode == 0, done.stderr
    assert tree_digest(state / "store") == before_store
    assert tree_digest(state / "home" / "keys") == before_keys
    assert "kept store" in done.stderr


def test_first_boot_without_the_exo_command_fails_clearly(tmp_path: Path) -> None:
    done = run_firstboot(tmp_path / "state", EXO_BIN=str(tmp_path / "missing" / "exo"))
    assert done.returncode == 1
    assert "cannot run" in done.stderr and not (tmp_path / "state").exists()


def test_a_failed_model_fetch_is_retried_next_boot(tmp_path: Path) -> None:
    """With ``exo models`` present, an unreachable index leaves no stamp (retried next boot) but the
    home and store are ready; without the command the stamp says the models are unavailable."""
    state = tmp_path / "state"
    done = run_firstboot(
        state,
        EXO_FETCH_MODELS="1",
        EXO_INDEX_URL="http://127.0.0.1:9/simple",
        EXO_MODELS_DIR=str(tmp_path / "no-models"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        EXO_CACHE_DIR=str(tmp_path / "cache"),
        PIP_NO_INDEX="0",
        PIP_FIND_LINKS="",
    )
    assert done.returncode == 0, done.stderr
    assert (state / "store" / "STORE.toml").is_file()
    if importlib.util.find_spec("exo_edge.models_cmd") is None:
        assert "models unavailable" in (state / ".firstboot-done").read_text()
    else:
        assert "model fetch failed" in done.stderr
        assert not (state / ".firstboot-done").exists()
