"""Ed25519 signing keys for the ledger: creation, loading and key ids.

A machine's signing key lives in the Exo home (``$EXO_HOME/keys``), never in
the store folder: the store moves between machines, the key does not. Each
machine that writes to a store signs with its own key; the store's
``STORE.toml`` lists the key ids of its owners so ``verify()`` can pin them.

Key id format: ``"ed25519:" + hex(verify key)`` (72 characters). The id *is*
the public key, so any copy of the ledger can check a signature without a key
directory; pinning decides which ids are trusted.

Key file format (one line, mode 0600)::

    exo-ed25519-seed-v1 <64 hex digits of the 32-byte seed>
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import nacl.exceptions
import nacl.signing

from exo_core.errors import ConflictError, CorruptDataError, NotFoundError, StorageError

__all__ = [
    "Signer",
    "KEY_FILE_NAME",
    "key_id_of",
    "verify_key_from_id",
    "is_key_id",
    "create_signing_key",
    "load_signing_key",
    "ensure_signing_key",
]

KEY_FILE_NAME = "ledger-ed25519.key"
_HEADER = "exo-ed25519-seed-v1"
_KEY_ID_RE = re.compile(r"ed25519:[0-9a-f]{64}")


def key_id_of(verify_key: nacl.signing.VerifyKey) -> str:
    """The key id (``ed25519:<hex>``) of a public key."""
    return "ed25519:" + bytes(verify_key).hex()


def is_key_id(value: object) -> bool:
    """True when ``value`` is a well-formed key id string."""
    return isinstance(value, str) and _KEY_ID_RE.fullmatch(value) is not None


def verify_key_from_id(key_id: str) -> nacl.signing.VerifyKey:
    """The public key a key id names; :class:`CorruptDataError` if malformed."""
    if not is_key_id(key_id):
        raise CorruptDataError(f"{key_id!r} is not a key id (expected 'ed25519:' + 64 hex digits)")
    try:
        return nacl.signing.VerifyKey(bytes.fromhex(key_id[8:]))
    except (ValueError, nacl.exceptions.CryptoError) as exc:
        raise CorruptDataError(f"{key_id!r} is not a valid Ed25519 public key") from exc


class Signer:
    """A loaded Ed25519 signing key. Holds the secret; never log or repr it."""

    __slots__ = ("_key", "key_id")

    def __init__(self, key: nacl.signing.SigningKey) -> None:
        self._key = key
        self.key_id: str = key_id_of(key.verify_key)

    @classmethod
    def from_seed(cls, seed: bytes) -> Signer:
        """A signer from a 32-byte seed (tests and key files)."""
        if len(seed) != 32:
            raise CorruptDataError(f"an Ed25519 seed is 32 bytes, found {len(seed)}")
        return cls(nacl.signing.SigningKey(seed))

    @classmethod
    def generate(cls) -> Signer:
        """A fresh random signer (not saved anywhere)."""
        return cls(nacl.signing.SigningKey.generate())

    def sign(self, message: bytes) -> bytes:
        """The 64-byte detached signature of ``message``."""
        return self._key.sign(message).signature

    def seed(self) -> bytes:
        """The 32-byte secret seed (for writing the key file only)."""
        return bytes(self._key)

    def __repr__(self) -> str:
        return f"Signer({self.key_id})"


def create_signing_key(keys_dir: Path, *, name: str = KEY_FILE_NAME) -> Signer:
    """Create a new signing key file in ``keys_dir`` and return its signer.

    ``keys_dir`` is created (mode 0700, tightened if it exists looser); the key
    file is created exclusively with mode 0600, so an existing key is never
    overwritten: that raises :class:`ConflictError`.
    """
    keys_dir = Path(keys_dir)
    try:
        keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(keys_dir, 0o700)
    except OSError as exc:
        raise StorageError(f"cannot create key directory {keys_dir}: {exc.strerror}") from exc
    path = keys_dir / name
    signer = Signer.generate()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise ConflictError(f"signing key {path} already exists; load it instead of creating a new one") from exc
    except OSError as exc:
        raise StorageError(f"cannot create signing key {path}: {exc.strerror}") from exc
    try:
        os.fchmod(fd, 0o600)  # the umask may have narrowed it further; never widened
        os.write(fd, f"{_HEADER} {signer.seed().hex()}\n".encode("ascii"))
        os.fsync(fd)
    except OSError as exc:
        path.unlink(missing_ok=True)  # a half-written key is worse than none
        raise StorageError(f"cannot write signing key {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    from exo_core.atomic import fsync_dir  # the store package imports this one

    fsync_dir(keys_dir)  # a new directory entry is durable only once its directory is synced
    return signer


def load_signing_key(keys_dir: Path, *, name: str = KEY_FILE_NAME) -> Signer:
    """Load the signing key from ``keys_dir``.

    Raises :class:`NotFoundError` when missing (run ``exo init``),
    :class:`StorageError` when the file is readable by group or others (like
    ssh, a leaked-permission key is refused rather than used), and
    :class:`CorruptDataError` when the content is not a key file.
    """
    path = Path(keys_dir) / name
    try:
        st = path.stat()
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"no signing key at {path}; run 'exo init' to create one") from exc
    except OSError as exc:
        raise StorageError(f"cannot read signing key {path}: {exc.strerror}") from exc
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise StorageError(
            f"signing key {path} has mode {stat.S_IMODE(st.st_mode):04o}; "
            "it must not be readable by group or others (chmod 600)"
        )
    try:
        header, seed_hex = raw.decode("ascii").split()
        seed = bytes.fromhex(seed_hex)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptDataError(f"{path} is not an Exo signing key file") from exc
    if header != _HEADER:
        raise CorruptDataError(f"{path}: unknown key file header {header!r}")
    return Signer.from_seed(seed)


def ensure_signing_key(keys_dir: Path, *, name: str = KEY_FILE_NAME) -> Signer:
    """Load the key in ``keys_dir``, creating it first when there is none."""
    try:
        return load_signing_key(keys_dir, name=name)
    except NotFoundError:
        try:
            return create_signing_key(keys_dir, name=name)
        except ConflictError:
            # Another process created it between our load and create: use theirs.
            return load_signing_key(keys_dir, name=name)
