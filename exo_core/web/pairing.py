"""Pairing codes: how a laptop or browser gets in without the token in a URL.

The device's owner asks exod for a code (``exo pair``, over the owner-only
Unix socket, or printed by ``exo serve --tcp``). The code is short enough to
read off a small screen and type (``XXXX-XXXX``, 31 symbols without 0/O, 1/I/L:
about 40 bits), **single use**, **expires** after a few minutes, and guessing
is **rate limited per source**: after a handful of wrong tries from one source
(an IPv4 address or IPv6 /64) that source is locked out for a while. Only that
source: five wrong codes from anyone once locked the owner out
too. Codes are kept only as SHA-256 hashes, in memory: a restart of exod
revokes them; the owner issuing a new code at the device lifts every lock.

Guessing budget: a source gets ``max_failures`` guesses per ``lockout``, so
with the defaults (5 per 60 s, codes live 300 s, 31^8 ≈ 8.5e11 codes) even 254
sources on a /24 get about 6,350 guesses at one code: a chance near 1 in 10^8.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exo_core.errors import AccessDeniedError

__all__ = ["PairingCodes", "IssuedCode", "PairingRefusedError", "PairingLockedError", "ALPHABET"]

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


class PairingRefusedError(AccessDeniedError):
    """A wrong, used or expired pairing code (HTTP 401)."""

    http_status = 401


class PairingLockedError(AccessDeniedError):
    """Too many wrong codes: pairing is locked for a while (HTTP 429)."""

    code = "rate_limited"
    http_status = 429


@dataclass(frozen=True, slots=True)
class IssuedCode:
    """A fresh code and how many seconds it stays valid."""

    code: str
    expires_in: float


def _digest(code: str) -> bytes:
    return hashlib.sha256("".join(ch for ch in code.upper() if ch.isalnum()).encode("ascii", "replace")).digest()


class PairingCodes:
    """Issues and redeems pairing codes (one per process, in memory)."""

    def __init__(
        self,
        *,
        ttl: float = 300.0,
        max_failures: int = 5,
        lockout: float = 60.0,
        max_outstanding: int = 4,
        max_sources: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._max_failures = max_failures
        self._lockout = lockout
        self._max_outstanding = max_outstanding
        self._max_sources = max_sources
        self._clock = clock
        self._codes: dict[bytes, float] = {}
        self._failures: dict[str, int] = {}  # source -> wrong codes in a row
        self._locked_until: dict[str, float] = {}  # source -> when its lockout ends

    def issue(self) -> IssuedCode:
        """A new code; the oldest outstanding one is dropped beyond the limit. Unlocks pairing."""
        now = self._clock()
        self._expire(now)
        while len(self._codes) >= self._max_outstanding:
            self._codes.pop(next(iter(self._codes)))
        raw = "".join(secrets.choice(ALPHABET) for _ in range(8))
        self._codes[_digest(raw)] = now + self.ttl
        # The owner asking for a new code is physically at the device: let them pair now.
        self._failures.clear()
        self._locked_until.clear()
        return IssuedCode(f"{raw[:4]}-{raw[4:]}", self.ttl)

    def redeem(self, offered: str, *, source: str = "") -> None:
        """Use up ``offered`` sent from ``source``.

        Raises :class:`PairingRefusedError` or :class:`PairingLockedError`.
        """
        now = self._clock()
        locked_until = self._locked_until.get(source, 0.0)
        if now < locked_until:
            raise PairingLockedError(
                f"too many wrong pairing codes from here; wait {locked_until - now:.0f} s "
                "or run `exo pair` on the device for a new code"
            )
        self._locked_until.pop(source, None)
        self._expire(now)
        if offered and self._codes.pop(_digest(offered), None) is not None:
            self._failures.pop(source, None)
            return
        failures = self._failures.pop(source, 0) + 1  # re-inserted last: the dict's order is least recent first
        if failures >= self._max_failures:
            self._locked_until[source] = now + self._lockout
            self._forget_oldest(self._locked_until)
            raise PairingLockedError(
                f"too many wrong pairing codes from here: locked for {self._lockout:.0f} s; "
                "run `exo pair` on the device for a new code"
            )
        self._failures[source] = failures
        self._forget_oldest(self._failures)
        raise PairingRefusedError("wrong, used or expired pairing code; run `exo pair` on the device for a new one")

    def _forget_oldest(self, table: dict[str, Any]) -> None:
        """Bound the per-source tables: many sources cost memory up to a fixed size, never more."""
        while len(table) > self._max_sources:
            table.pop(next(iter(table)))

    def _expire(self, now: float) -> None:
        self._codes = {key: until for key, until in self._codes.items() if until > now}
