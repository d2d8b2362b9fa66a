"""Ledger entries: the signed, hash-chained record and its exact byte rules.

An entry's *content* is one canonical JSON object (see :mod:`.canonical`)::

    {"author": "ed25519:<hex>", "body": {...}, "idem": "<key>" (optional),
     "kind": "<kind>", "refs": ["<id>", ...], "scope": "person", "ts": <ms>,
     "v": 1}

* ``id    = sha256(content bytes)`` (hex) — the content's name;
* ``prev  =`` the chain hash of the entry before it on its chain, or for the
  first entry the ledger's genesis hash
  ``sha256("exo-ledger/1 genesis\\n" + ledger_id)``;
* ``chain = sha256(ascii(prev_hex + id_hex))`` (hex);
* ``sig   = Ed25519(author key, b"exo-ledger/1 entry\\n" + ascii(chain_hex))``.

The signature covers the chain hash, so an author signs the entry *and* its
place in history; an entry copied to another chain fails. The content carries
no position, so a copy of the same history on another machine keeps the same
ids, chain hashes and signatures (that is what makes sync possible).

Position is stored beside the content: ``n`` (local arrival order, dense),
``seg`` (0 = this copy's main chain; >0 = a fork segment imported by sync) and
``pos`` (height: 1-based length of the path from genesis).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import nacl.exceptions

from exo_core.errors import BadBodyError, CorruptDataError
from exo_core.ledger.canonical import canonical_json, parse_canonical, sha256_hex
from exo_core.ledger.keys import Signer, is_key_id, verify_key_from_id
from exo_core.ledger.kinds import is_entry_id, validate_body, validate_kind, validate_scope
from exo_core.protocol.envelopes import shallow_dict

__all__ = [
    "FORMAT_VERSION",
    "NewEntry",
    "StoredEntry",
    "genesis_hash",
    "chain_hash",
    "entry_signing_message",
    "build_content",
    "seal",
    "decode_row",
    "check_seal",
    "ROW_COLUMNS",
    "check_refs",
]

FORMAT_VERSION = 1
MAX_CONTENT_BYTES = 1 << 20  # one entry's content; larger things belong in items/files
MAX_IDEM_CHARS = 200
_CONTENT_KEYS = frozenset({"v", "kind", "scope", "author", "ts", "refs", "body", "idem"})
_ENTRY_DOMAIN = b"exo-ledger/1 entry\n"

# The SELECT list every reader uses. Text columns are read as BLOBs so a
# corrupted byte surfaces as CorruptDataError from decode_row, not as
# sqlite3's "Could not decode to UTF-8" on some unrelated row.
ROW_COLUMNS = (
    "n, seg, pos, CAST(id AS BLOB), CAST(prev AS BLOB), CAST(chain AS BLOB), CAST(author AS BLOB), sig, "
    "CAST(kind AS BLOB), CAST(scope AS BLOB), ts, CAST(idem AS BLOB), content"
)


def genesis_hash(ledger_id: str) -> str:
    """The ``prev`` of the first entry of a ledger named ``ledger_id``."""
    return sha256_hex(("exo-ledger/1 genesis\n" + ledger_id).encode("utf-8"))


def chain_hash(prev: str, entry_id: str) -> str:
    """``sha256(prev + id)`` over the two hex strings as ASCII."""
    return sha256_hex((prev + entry_id).encode("ascii"))


def entry_signing_message(chain: str) -> bytes:
    """The bytes an entry's author signs: a domain tag plus the chain hash."""
    return _ENTRY_DOMAIN + chain.encode("ascii")


@dataclass(frozen=True, slots=True)
class NewEntry:
    """An entry to append: what the caller decides. Author, time and position come from the ledger."""

    kind: str
    body: Mapping[str, Any]
    refs: tuple[str, ...] = ()
    scope: str | None = None
    idem: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One entry as stored: content fields, seal and local position.

    ``body`` is a plain dict parsed from ``content``; treat it as read-only
    (the bytes in ``content`` are the truth that ``id`` names).
    """

    n: int
    seg: int
    pos: int
    id: str
    prev: str
    chain: str
    author: str
    sig: bytes
    kind: str
    scope: str
    ts: int
    idem: str | None
    refs: tuple[str, ...]
    body: dict[str, Any]
    content: bytes

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (for ``exo ledger show --json`` and exports)."""
        wire = {name: value for name, value in shallow_dict(self).items() if name != "content"}
        return {**wire, "sig": self.sig.hex(), "refs": list(self.refs)}


def check_refs(refs: Sequence[str]) -> tuple[str, ...]:
    """``refs`` as a tuple if every one is an entry id and none repeats; else BadBodyError."""
    out = tuple(refs)
    for i, ref in enumerate(out):
        if not is_entry_id(ref):
            raise BadBodyError(f"refs[{i}] {ref!r} is not an entry id (64 hex digits)", field="refs")
    if len(set(out)) != len(out):
        raise BadBodyError("refs lists the same entry twice", field="refs")
    return out


def build_content(
    *, kind: str, scope: str, author: str, ts: int, refs: Sequence[str], body: Mapping[str, Any], idem: str | None
) -> bytes:
    """Validate the parts of a new entry and return its canonical content bytes.

    Raises :class:`BadBodyError` naming the bad field; nothing is written.
    """
    validate_kind(kind)
    validate_scope(scope)
    refs_t = check_refs(refs)
    validate_body(kind, body, refs_t)
    if idem is not None and (not isinstance(idem, str) or not 0 < len(idem) <= MAX_IDEM_CHARS):
        raise BadBodyError(f"idempotency key must be 1-{MAX_IDEM_CHARS} characters", field="idem")
    doc = {
        "v": FORMAT_VERSION,
        "kind": kind,
        "scope": scope,
        "author": author,
        "ts": ts,
        "refs": list(refs_t),
        "body": body,
        **({} if idem is None else {"idem": idem}),
    }
    content = canonical_json(doc, field="body")
    if len(content) > MAX_CONTENT_BYTES:
        raise BadBodyError(f"entry is {len(content)} bytes; the limit is {MAX_CONTENT_BYTES}", field="body")
    return content


def seal(content: bytes, prev: str, signer: Signer) -> tuple[str, str, bytes]:
    """``(id, chain, sig)`` for ``content`` placed after ``prev``."""
    entry_id = sha256_hex(content)
    chain = chain_hash(prev, entry_id)
    return entry_id, chain, signer.sign(entry_signing_message(chain))


def _text(value: object, column: str) -> str:
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptDataError(f"column {column} is not UTF-8") from exc
    if isinstance(value, str):
        return value
    raise CorruptDataError(f"column {column} holds {type(value).__name__}, expected text")


def _int(value: object, column: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptDataError(f"column {column} holds {type(value).__name__}, expected an integer")
    return value


def decode_row(row: Sequence[object]) -> StoredEntry:
    """Decode one stored row (columns as :data:`ROW_COLUMNS`) into a StoredEntry.

    Checks structure only: column types, canonical content, known kind and a
    valid body, and that the denormalised columns (kind, scope, author, ts,
    idem) agree with the content. Cryptographic checks are :func:`check_seal`.
    Any defect raises :class:`CorruptDataError`; nothing else escapes.
    """
    if len(row) != 13:
        raise CorruptDataError(f"row has {len(row)} columns, expected 13")
    n, seg, pos = _int(row[0], "n"), _int(row[1], "seg"), _int(row[2], "pos")
    entry_id, prev, chain = _text(row[3], "id"), _text(row[4], "prev"), _text(row[5], "chain")
    author, sig = _text(row[6], "author"), row[7]
    kind_col, scope_col = _text(row[8], "kind"), _text(row[9], "scope")
    ts_col = _int(row[10], "ts")
    idem_col = None if row[11] is None else _text(row[11], "idem")
    content = row[12]
    for name, value in (("id", entry_id), ("prev", prev), ("chain", chain)):
        if not is_entry_id(value):
            raise CorruptDataError(f"column {name} is not 64 lower-case hex digits")
    if not isinstance(sig, bytes) or len(sig) != 64:
        raise CorruptDataError("column sig is not a 64-byte signature")
    if not isinstance(content, bytes):
        raise CorruptDataError("column content is not a BLOB")
    doc = parse_canonical(content, what="content")
    if not isinstance(doc, dict) or not set(doc) <= _CONTENT_KEYS or not (_CONTENT_KEYS - {"idem"}) <= set(doc):
        raise CorruptDataError("content does not have the entry fields")
    if type(doc["v"]) is not int or doc["v"] != FORMAT_VERSION:  # true == 1 in Python
        raise CorruptDataError(f"content format version {doc['v']!r} is not {FORMAT_VERSION}")
    refs = doc["refs"]
    if not isinstance(refs, list):
        raise CorruptDataError("content refs is not a list")
    ts, idem = doc["ts"], doc.get("idem")
    try:
        refs_t = check_refs(refs)
        validate_kind(doc["kind"])
        validate_scope(doc["scope"])
        validate_body(doc["kind"], doc["body"], refs_t)
    except BadBodyError as exc:
        raise CorruptDataError(f"content: {exc.message}") from exc
    if not is_key_id(doc["author"]):
        raise CorruptDataError("content author is not a key id")
    if not isinstance(ts, int) or isinstance(ts, bool):
        raise CorruptDataError("content ts is not an integer")
    if idem is not None and not isinstance(idem, str):
        raise CorruptDataError("content idem is not a string")
    columns = (
        ("kind", kind_col, doc["kind"]),
        ("scope", scope_col, doc["scope"]),
        ("author", author, doc["author"]),
        ("ts", ts_col, ts),
        ("idem", idem_col, idem),
    )
    mismatched = [name for name, col, val in columns if col != val]
    if mismatched:
        raise CorruptDataError(f"column(s) {', '.join(mismatched)} disagree with the signed content")
    return StoredEntry(
        n=n,
        seg=seg,
        pos=pos,
        id=entry_id,
        prev=prev,
        chain=chain,
        author=author,
        sig=sig,
        kind=doc["kind"],
        scope=doc["scope"],
        ts=ts,
        idem=idem,
        refs=refs_t,
        body=doc["body"],
        content=content,
    )


def check_seal(entry: StoredEntry) -> str | None:
    """Recompute id, chain hash and signature; return why they fail, or None."""
    if sha256_hex(entry.content) != entry.id:
        return "id does not match the content hash"
    if chain_hash(entry.prev, entry.id) != entry.chain:
        return "chain hash does not equal sha256(prev + id)"
    try:
        verify_key_from_id(entry.author).verify(entry_signing_message(entry.chain), entry.sig)
    except CorruptDataError as exc:
        return exc.message
    except nacl.exceptions.BadSignatureError:
        return "signature does not verify against the author's key"
    return None
