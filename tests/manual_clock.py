"""A clock for tests of timeouts, backoff and fading: it moves only when the test advances it.

It fits the production clock seam (``now``, ``monotonic``, ``sleep``), so code under test
runs unchanged and no test waits for real time to pass.
"""

from __future__ import annotations

import asyncio

__all__ = ["ManualClock"]


class ManualClock:
    """Monotonic time that moves only when :meth:`advance` is called; sleepers wake when it passes."""

    def __init__(self, *, start: float = 0.0, epoch: float = 1_800_000_000.0) -> None:
        self.t = start
        self._epoch = epoch
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        """Wall-clock seconds: ``epoch`` plus the monotonic time."""
        return self._epoch + self.t

    def monotonic(self) -> float:
        """Seconds advanced so far (plus ``start``)."""
        return self.t

    async def sleep(self, seconds: float) -> None:
        """Wait until the test has advanced the clock by ``seconds``."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.t + seconds, future))
        await future

    @property
    def sleeping(self) -> int:
        """How many sleeps are still waiting."""
        return sum(1 for _, f in self._sleepers if not f.done())

    def advance(self, seconds: float) -> None:
        """Move time on and wake every sleeper whose deadline has passed."""
        self.t += seconds
        for due, future in self._sleepers:
            if due <= self.t and not future.done():
                future.set_result(None)
