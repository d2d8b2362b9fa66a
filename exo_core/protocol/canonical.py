"""Canonical JSON: the one byte form wherever a hash or a byte comparison covers JSON.

Contract: keys sorted, no insignificant whitespace (separators ``,`` and ``:``),
non-ASCII characters kept as UTF-8 (not ``\\u`` escapes), no NaN or infinity.
The same value always gives the same bytes, so two clients replaying the same
events receive identical bytes and a hash of an entry is stable.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json", "canonical_bytes"]


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text. Raises ``ValueError`` for NaN/inf."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    """``value`` as canonical JSON, UTF-8 encoded."""
    return canonical_json(value).encode("utf-8")
