"""Canonical JSON for the ledger: typed validation around the one shared byte form.

The bytes come from :func:`exo_core.protocol.canonical.canonical_bytes` (the
core's single canonical-JSON function); this module adds what a hashed,
signed record needs on top: values are normalised first with a typed error
naming the bad field, and :func:`parse_canonical` is a strict inverse.

The contract (documented in ``docs/ledger.md``; other languages must match it
byte for byte):

* UTF-8, no BOM; ``ensure_ascii=False`` so non-ASCII text is stored as itself;
* object keys sorted by code point, no duplicate keys;
* separators ``,`` and ``:`` with no whitespace anywhere;
* allowed values: objects with string keys, arrays, strings, integers,
  ``true``/``false``/``null`` and finite floats (written as Python's shortest
  round-trip ``repr``); NaN and infinities are refused because JSON has no
  spelling for them and other parsers disagree about them;
* strings must be valid Unicode (a lone surrogate cannot be encoded as UTF-8).

:func:`parse_canonical` is the strict inverse: it accepts bytes only if they
are exactly the canonical encoding of what they decode to, so two different
byte strings can never stand for the same document.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from exo_core.errors import BadBodyError, CorruptDataError
from exo_core.protocol.canonical import canonical_bytes

__all__ = ["canonical_json", "parse_canonical", "sha256_hex", "normalize_json"]

# Nesting beyond this is refused: a deep document is either a bug or an attack
# on the recursive encoder/decoder (RecursionError is not an ExoError).
MAX_DEPTH = 32


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def normalize_json(value: Any, *, field: str = "body", _depth: int = 0) -> Any:
    """Return ``value`` as plain JSON types (dict/list/str/int/float/bool/None).

    Tuples become lists and mappings become dicts, so a document compares equal
    to what :func:`parse_canonical` gives back. Raises :class:`BadBodyError`
    naming ``field`` (with a path) for anything JSON cannot carry exactly.
    """
    if _depth > MAX_DEPTH:
        raise BadBodyError(f"{field}: nested deeper than {MAX_DEPTH} levels", field=field)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)  # IntEnum and friends collapse to a plain int
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BadBodyError(f"{field}: {value!r} is not a finite number", field=field)
        return float(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadBodyError(f"{field}: string is not valid Unicode ({exc.reason})", field=field) from exc
        return str(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise BadBodyError(f"{field}: object key {key!r} is not a string", field=field)
            normalize_json(key, field=f"{field}.<key>", _depth=_depth + 1)
            out[key] = normalize_json(item, field=f"{field}.{key}", _depth=_depth + 1)
        return out
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [normalize_json(item, field=f"{field}[{i}]", _depth=_depth + 1) for i, item in enumerate(value)]
    raise BadBodyError(f"{field}: {type(value).__name__} is not a JSON value", field=field)


def canonical_json(value: Any, *, field: str = "body") -> bytes:
    """The canonical UTF-8 bytes of ``value`` (see the module docstring).

    Raises :class:`BadBodyError` naming ``field`` when ``value`` holds
    something JSON cannot carry exactly.
    """
    # normalize_json already refused everything canonical_bytes could choke on
    # (NaN, non-string keys, surrogates), so its ValueError cannot happen here.
    return canonical_bytes(normalize_json(value, field=field))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_canonical(data: bytes, *, what: str = "document") -> Any:
    """Decode canonical JSON bytes, refusing anything not in canonical form.

    Raises :class:`CorruptDataError` naming ``what`` when the bytes are not
    UTF-8, not JSON, hold duplicate keys, NaN or infinities, nest too deeply,
    or are not byte-identical to the canonical encoding of their value.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CorruptDataError(f"{what}: expected bytes, found {type(data).__name__}")
    raw = bytes(data)
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # json.JSONDecodeError is a ValueError; so are our hooks' refusals.
        raise CorruptDataError(f"{what}: not valid canonical JSON ({exc})") from exc
    try:
        again = canonical_json(value, field=what)
    except BadBodyError as exc:
        raise CorruptDataError(f"{what}: {exc.message}") from exc
    if again != raw:
        raise CorruptDataError(f"{what}: JSON is valid but not in canonical form")
    return value
