"""Signing keys: created exclusively with mode 0600 in a 0700 directory; loose or bad files refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from exo_core.errors import ConflictError, CorruptDataError, NotFoundError, StorageError
from exo_core.ledger import create_signing_key, ensure_signing_key, is_key_id, load_signing_key
from exo_core.ledger.keys import KEY_FILE_NAME, verify_key_from_id
from exo_core.seams.home import ExoHome


def test_create_and_load(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "home")
    signer = create_signing_key(home.keys_dir)
    assert stat.S_IMODE(home.keys_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((home.keys_dir / KEY_FILE_NAME).stat().st_mode) == 0o600
    assert is_key_id(signer.key_id)
    loaded = load_signing_key(home.keys_dir)
    assert loaded.key_id == signer.key_id
    sig = loaded.sign(b"m")
    verify_key_from_id(signer.key_id).verify(b"m", sig)
    assert "seed" not in repr(loaded) and signer.seed().hex() not in repr(loaded)


def test_never_overwrites(tmp_path: Path) -> None:
    first = create_signing_key(tmp_path / "keys")
    with pytest.raises(ConflictError):
        create_signing_key(tmp_path / "keys")
    assert load_signing_key(tmp_path / "keys").key_id == first.key_id
    assert ensure_signing_key(tmp_path / "keys").key_id == first.key_id


def test_ensure_creates(tmp_path: Path) -> None:
    assert ensure_signing_key(tmp_path / "k").key_id == load_signing_key(tmp_path / "k").key_id


def test_missing_key(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="exo init"):
        load_signing_key(tmp_path)


def test_loose_permissions_refused(tmp_path: Path) -> None:
    create_signing_key(tmp_path / "keys")
    os.chmod(tmp_path / "keys" / KEY_FILE_NAME, 0o644)
    with pytest.raises(StorageError, match="chmod 600"):
        load_signing_key(tmp_path / "keys")


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", b"exo-ed25519-seed-v1 zz", b"other-v9 " + b"00" * 32, b"exo-ed25519-seed-v1 " + b"00" * 31],
)
def test_corrupt_key_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / KEY_FILE_NAME
    path.write_bytes(content)
    os.chmod(path, 0o600)
    with pytest.raises(CorruptDataError):
        load_signing_key(tmp_path)


@pytest.mark.parametrize("bad", ["ed25519:xyz", "rsa:" + "0" * 64, "ed25519:" + "A" * 64, ""])
def test_bad_key_ids(bad: str) -> None:
    assert not is_key_id(bad)
    with pytest.raises(CorruptDataError):
        verify_key_from_id(bad)
