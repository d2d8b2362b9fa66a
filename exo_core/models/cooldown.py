"""Credential cooldowns (docs/models.md §3), on an injectable clock.

A failed credential is set aside for a time that depends on the failure kind
(:data:`COOLDOWN_SECONDS`). A rate limit with a stated ``retry_after`` is
honoured, except for a provider's *lone* credential: limits are often lifted
early, so a lone credential is probed again after ``max(60 s, 2 % of the
remaining window)``, never later than the stated reset, and every failed
probe re-stamps that shorter window from what then remains.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from exo_core.seams.failures import FailureKind

__all__ = [
    "Clock",
    "COOLDOWN_SECONDS",
    "PROBE_FLOOR_SECONDS",
    "PROBE_FRACTION",
    "Cooldown",
    "CooldownBook",
    "probe_delay",
]

Clock = Callable[[], float]

# How long a credential rests after each kind of failure (seconds).
COOLDOWN_SECONDS: dict[FailureKind, float] = {
    FailureKind.RATE_LIMIT: 60.0,  # without retry_after; with it, retry_after
    FailureKind.SERVER: 30.0,
    FailureKind.NETWORK: 15.0,
    FailureKind.AUTH: 3600.0,
    FailureKind.BILLING: 3600.0,
    FailureKind.NOT_FOUND: 600.0,
    FailureKind.UNAVAILABLE: 300.0,
    FailureKind.BAD_REQUEST: 0.0,  # the request's fault: the credential is fine
}
PROBE_FLOOR_SECONDS = 60.0
PROBE_FRACTION = 0.02


def probe_delay(remaining: float) -> float:
    """Seconds until a lone credential is probed, ``remaining`` before its stated reset."""
    return 0.0 if remaining <= 0 else min(max(PROBE_FLOOR_SECONDS, PROBE_FRACTION * remaining), remaining)


@dataclass(frozen=True, slots=True)
class Cooldown:
    """One credential's rest: until ``until``; ``reset_at`` is a stated reset (rate limits)."""

    credential: str
    kind: FailureKind
    until: float
    reset_at: float | None = None
    failures: int = 1
    detail: str = ""


class CooldownBook:
    """Which credentials are resting, and until when. Times come from ``clock``."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._rest: dict[str, Cooldown] = {}

    def remaining(self, credential: str) -> float:
        """Seconds until ``credential`` may be tried again (0 when it may now)."""
        rest = self._rest.get(credential)
        return 0.0 if rest is None else max(0.0, rest.until - self.clock())

    def get(self, credential: str) -> Cooldown | None:
        """The cooldown record of ``credential``, if it ever failed since its last success."""
        return self._rest.get(credential)

    def fail(
        self,
        credential: str,
        kind: FailureKind,
        *,
        retry_after: float | None = None,
        lone: bool = False,
        detail: str = "",
    ) -> Cooldown:
        """Record a failure and return the resulting cooldown.

        ``lone`` says the credential is its provider's only one, which turns a
        stated rate-limit window into the probe rule.
        """
        now = self.clock()
        previous = self._rest.get(credential)
        failures, stated = (previous.failures + 1, previous.reset_at) if previous is not None else (1, None)
        reset_at: float | None = None
        if kind is FailureKind.RATE_LIMIT and retry_after is not None:
            reset_at = now + retry_after
        elif kind is FailureKind.RATE_LIMIT and stated is not None and stated > now:
            reset_at = stated  # a failed probe without a new statement
        if reset_at is None:
            wait = COOLDOWN_SECONDS[kind]
        elif lone:
            wait = probe_delay(reset_at - now)
        else:
            wait = reset_at - now
        record = Cooldown(credential, kind, now + wait, reset_at, failures, detail)
        if wait > 0:
            self._rest[credential] = record
        return record

    def succeed(self, credential: str) -> None:
        """Forget ``credential``'s failures: it works."""
        self._rest.pop(credential, None)
