"""The injectable clock: wall time for timestamps, monotonic time for timeouts.

Timeouts, backoff and cooldowns take a :class:`Clock` so tests drive time
without sleeping.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock", "iso_utc"]


class Clock(Protocol):
    """Wall and monotonic time, and sleeping."""

    def now(self) -> float:
        """Seconds since the epoch (wall time)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def iso_utc(epoch_seconds: float) -> str:
    """``2026-11-30T06:29:58.123Z`` for an epoch time (milliseconds, UTC)."""
    stamp = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
