"""Pairing codes: how a laptop or browser gets in without the token in a URL.

The device's owner asks exod for a code (``exo pair``, over the owner-only
Unix socket, or printed by ``exo serve --tcp``). The code is short enough to
read off a small screen and type (``XXXX-XXXX``, 31 symbols without 0/O, 1/I/L:
about 40 bits), **single use**, **expires** after a few minutes, and guessing
is **rate limited**: after a handful of wrong tries every outstanding code is
revoked and pairing is locked for a while, so an attacker on the LAN gets a
few guesses per code the owner issues. Codes are kept only as SHA-256 hashes,
in memory: a restart of exod revokes them.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._max_failures = max_failures
        self._lockout = lockout
        self._max_outstanding = max_outstanding
        self._clock = clock
        self._codes: dict[bytes, float] = {}
        self._failures = 0
        self._locked_until = 0.0

    def issue(self) -> IssuedCode:
        """A new code; the oldest outstanding one is dropped beyond the limit. Unlocks pairing."""
        now = self._clock()
        self._expire(now)
        while len(self._codes) >= self._max_outstanding:
            self._codes.pop(next(iter(self._codes)))
        raw = "".join(secrets.choice(ALPHABET) for _ in range(8))
        self._codes[_digest(raw)] = now + self.ttl
        # The owner asking for a new code is physically at the device: let them pair now.
        self._failures, self._locked_until = 0, 0.0
        return IssuedCode(f"{raw[:4]}-{raw[4:]}", self.ttl)

    def redeem(self, offered: str) -> None:
        """Use up ``offered``; raise :class:`PairingRefusedError` or :class:`PairingLockedError`."""
        now = self._clock()
        if now < self._locked_until:
            raise PairingLockedError(
                f"too many wrong pairing codes; wait {self._locked_until - now:.0f} s or run `exo pair` for a new code"
            )
        self._expire(now)
        if offered and self._codes.pop(_digest(offered), None) is not None:
            self._failures = 0
            return
        self._failures += 1
        if self._failures >= self._max_failures:
            self._codes.clear()
            self._locked_until = now + self._lockout
            self._failures = 0
            raise PairingLockedError(
                "too many wrong pairing codes: every code is revoked; run `exo pair` for a new one"
            )
        raise PairingRefusedError("wrong, used or expired pairing code; run `exo pair` on the device for a new one")

    def _expire(self, now: float) -> None:
        self._codes = {key: until for key, until in self._codes.items() if until > now}
