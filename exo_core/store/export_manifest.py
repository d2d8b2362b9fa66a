"""``MANIFEST.json``: the hashes of every file of an exported store.

Written last by an export, so its presence means every file before it was
complete. Canonical JSON (sorted keys, no whitespace, UTF-8) because a hash
covers it: ``digest`` is sha256 over the canonical bytes of the manifest
without ``digest``. A digest alone proves nothing (anyone who edits a file can
re-hash), so an export made with a key also carries ``owner`` (the owner key
the exporting machine pinned) and ``signature``::

    "signature": {"key": "ed25519:…", "sig": "<128 hex>"}
    sig = Ed25519(key, b"exo-store/1 manifest\n" + canonical(manifest without "signature"))

Verify and import accept it only when ``key`` is a key the *verifying*
machine trusts for the store (:mod:`exo_core.ledger.trust`). Derived indexes, hidden files and machine state
(``indexes/``, ``.exo/``, ``.git/``, dot-files) are not part of a copy.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from exo_core.store import layout
from exo_core.store.errors import StoreFormatError

__all__ = [
    "Manifest",
    "ManifestSigner",
    "SIGNATURE_DOMAIN",
    "FileEntry",
    "canonical_json",
    "copy_candidates",
    "hash_file",
    "build_manifest",
    "read_manifest",
    "MANIFEST_FORMAT",
]

MANIFEST_FORMAT = 1
SIGNATURE_DOMAIN = b"exo-store/1 manifest\n"


class ManifestSigner(Protocol):
    """What signs a manifest: the ledger's :class:`~exo_core.ledger.keys.Signer` satisfies it."""

    @property
    def key_id(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...


_SKIP_TOP = frozenset({layout.INDEXES_DIR, layout.STATE_DIR, ".git", layout.MANIFEST})


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same content always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def hash_file(path: Path) -> tuple[str, int]:
    """``(sha256 hex, size)`` of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


_TEMP = re.compile(r"\..*\.(tmp-|export-|rebuild|init-)")


def copy_candidates(root: Path) -> Iterator[Path]:
    """Relative paths of the files an export copies, sorted.

    Left out: SQLite side files (the backup API folds them in), derived
    indexes, machine state (``.exo/``), the store's git repository, and our
    own temp files. Other dot-files (``.gitignore``, ``.obsidian/``) travel.
    """
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        nested_skip = len(rel.parts) >= 3 and rel.parts[0] in layout.NESTED_DIRS and rel.parts[2] in _SKIP_TOP
        if rel.parts[0] in _SKIP_TOP or nested_skip or any(_TEMP.match(part) for part in rel.parts):
            continue
        # SQLite side files are left out too: the backup API folds them into the copied database.
        if path.is_file() and not path.is_symlink() and not path.name.endswith(("-wal", "-shm", "-journal")):
            yield rel


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file's hash and size in the manifest."""

    sha256: str
    size: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """A parsed manifest."""

    export_id: str
    exported_at: str
    store_id: str
    store_format: int
    files: dict[str, FileEntry]
    ledger: dict[str, Any]
    digest: str
    owner: str = ""
    signer: str = ""
    sig: bytes = b""
    signed: bytes = b""  # the bytes the signature covers

    def signature_ok(self) -> bool:
        """True when the manifest is signed and the signature verifies under ``signer``.

        Whether ``signer`` is a key to trust is the caller's question (the trust anchor)."""
        import nacl.exceptions

        from exo_core.errors import CorruptDataError
        from exo_core.ledger.keys import verify_key_from_id  # the ledger imports nacl; the store stays light

        if not self.signer or len(self.sig) != 64:
            return False
        try:
            verify_key_from_id(self.signer).verify(SIGNATURE_DOMAIN + self.signed, self.sig)
        except (CorruptDataError, nacl.exceptions.BadSignatureError):
            return False
        return True

    def describe(self) -> str:
        """One line saying which copy this is."""
        ledger = f", ledger {self.ledger.get('size')} entries" if self.ledger else ""
        return (
            f"export {self.export_id} of {self.store_id or 'an unnamed store'} at {self.exported_at}: "
            f"{len(self.files)} files{ledger}"
        )


def build_manifest(
    root: Path,
    *,
    export_id: str,
    exported_at: str,
    store_id: str,
    store_format: int,
    ledger: dict[str, Any],
    owner: str | None = None,
    signer: ManifestSigner | None = None,
    history: Mapping[str, list[str | None]] | None = None,
) -> bytes:
    """Hash every copied file under ``root`` and return the manifest bytes, signed when ``signer`` is given.

    ``history`` is the copy's record of what it held (:mod:`exo_core.store.history`),
    signed with the rest so a copy's history cannot be rewritten unnoticed."""
    files = {
        rel.as_posix(): dict(zip(("sha256", "size"), hash_file(root / rel), strict=True))
        for rel in copy_candidates(root)
    }
    doc: dict[str, Any] = {
        "manifest": MANIFEST_FORMAT,
        "export_id": export_id,
        "exported_at": exported_at,
        "store_id": store_id,
        "store_format": store_format,
        "files": files,
        "ledger": ledger,
    }
    if owner is not None:
        doc["owner"] = owner
    if history is not None:
        doc["history"] = dict(history)
    doc["digest"] = hashlib.sha256(canonical_json(doc)).hexdigest()
    if signer is not None:
        signature = signer.sign(SIGNATURE_DOMAIN + canonical_json(doc))
        doc["signature"] = {"key": signer.key_id, "sig": signature.hex()}
    return canonical_json(doc)


def read_manifest(root: Path) -> Manifest | None:
    """The manifest of ``root``, None when there is none; malformed raises naming the file."""
    path = root / layout.MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None

    def bad(message: str) -> StoreFormatError:
        return StoreFormatError(
            message + "; the copy is incomplete or altered, export it again", path=path, rule="manifest"
        )

    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("manifest") != MANIFEST_FORMAT:
        raise bad(f"not a format-{MANIFEST_FORMAT} manifest")
    signature = doc.pop("signature", None)
    digest = doc.pop("digest", None)
    signed_doc = {**doc, "digest": digest}
    if raw != canonical_json(signed_doc if signature is None else {**signed_doc, "signature": signature}):
        raise bad("not in canonical form")
    if digest != hashlib.sha256(canonical_json(doc)).hexdigest():
        raise bad("digest does not match its content")
    signer, sig = "", b""
    if signature is not None:
        if not isinstance(signature, dict) or set(signature) != {"key", "sig"}:
            raise bad("'signature' must be an object with 'key' and 'sig'")
        try:
            signer, sig = str(signature["key"]), bytes.fromhex(str(signature["sig"]))
        except ValueError as exc:
            raise bad("'signature.sig' is not hex") from exc
    owner = doc.get("owner", "")
    if not isinstance(owner, str):
        raise bad("'owner' must be a key id")
    try:
        files = {k: FileEntry(str(v["sha256"]), int(v["size"])) for k, v in doc["files"].items()}
        return Manifest(
            str(doc["export_id"]),
            str(doc["exported_at"]),
            str(doc["store_id"]),
            int(doc["store_format"]),
            files,
            dict(doc["ledger"]),
            str(digest),
            owner,
            signer,
            sig,
            canonical_json(signed_doc),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"missing or mistyped field ({exc})") from exc
