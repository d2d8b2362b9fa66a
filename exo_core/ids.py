"""The injectable id generator.

Ids are ``<prefix>_<26 chars>``: a millisecond timestamp and randomness in
Crockford base32, so they sort by creation time. Tests inject
:class:`CountingIds` for deterministic ids.
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Protocol

__all__ = ["IdFactory", "RandomIds", "CountingIds"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class IdFactory(Protocol):
    """Makes new unique ids with a short type prefix."""

    def new(self, prefix: str) -> str:
        """A new id such as ``ses_01J...``."""
        ...


class RandomIds:
    """Time-ordered random ids (48-bit millisecond time + 80 random bits)."""

    def new(self, prefix: str) -> str:
        value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
        return prefix + "_" + "".join(_ALPHABET[(value >> (5 * i)) & 31] for i in reversed(range(26)))


class CountingIds:
    """Deterministic ids ``<prefix>_000001``, ``<prefix>_000002``, ... (for tests)."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new(self, prefix: str) -> str:
        return f"{prefix}_{next(self._counter):06d}"
