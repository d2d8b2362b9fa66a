"""Logging that an attacker cannot turn into a flood.

A peer that opens thousands of connections, or a loop that fails the same way
every millisecond, once wrote 223,734 tracebacks (101 MB in 30 s) into exod's
log. :class:`QuietLog` logs the first record of each kind,
counts the repeats for ``interval`` seconds and then logs one summary line with
the count; the number of kinds it tracks is bounded, so the log stays small and
so does memory. :class:`QuietFilter` puts the records of the ``asyncio`` and
``aiohttp.server`` loggers (``socket.accept() out of system resource``, "Error
handling request" and the like) through it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["QuietFilter", "QuietLog"]


class QuietLog:
    """Logs the first record of each kind per ``interval``; repeats become one summary line."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = 30.0,
        max_kinds: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._max_kinds = max_kinds
        self._clock = clock
        self._windows: dict[str, list[float]] = {}  # kind -> [window start, repeats not yet logged]

    def allow(self, kind: str) -> bool:
        """Whether a record of ``kind`` may be written now; if not, it is counted for the summary."""
        now = self._clock()
        window = self._windows.get(kind)
        if window is not None and now - window[0] < self._interval:
            window[1] += 1
            return False
        if window is not None and window[1]:
            self._logger.warning("%s: %d more like this in the last %.0f s", kind, int(window[1]), now - window[0])
        if window is None and len(self._windows) >= self._max_kinds:
            self._windows.pop(next(iter(self._windows)))  # forget the oldest kind; memory stays bounded
        self._windows[kind] = [now, 0]
        return True

    def log(self, level: int, kind: str, message: str, *args: Any, exc_info: Any = None) -> bool:
        """Log ``message`` unless ``kind`` was logged in this window; returns whether it was written."""
        if not self.allow(kind):
            return False
        self._logger.log(level, message, *args, exc_info=exc_info)
        return True

    def warning(self, kind: str, message: str, *args: Any) -> bool:
        """:meth:`log` at WARNING."""
        return self.log(logging.WARNING, kind, message, *args)

    def flush(self) -> None:
        """Log the summaries still pending (at shutdown)."""
        now = self._clock()
        for kind, (start, repeats) in self._windows.items():
            if repeats:
                self._logger.warning("%s: %d more like this in the last %.0f s", kind, int(repeats), now - start)
        self._windows.clear()


class QuietFilter(logging.Filter):
    """A logging filter that lets through the first record of each message template per window.

    Installed on the ``asyncio`` and ``aiohttp.server`` loggers by exod, whose
    records repeat once per connection or per failed ``accept`` under attack.
    """

    def __init__(self, quiet: QuietLog | None = None) -> None:
        super().__init__()
        self._quiet = quiet or QuietLog(logging.getLogger("exo_core.server.quietlog"))

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is the first of its kind in this window."""
        return self._quiet.allow(f"{record.name}: {record.msg}")
