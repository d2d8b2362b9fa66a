"""The server's list of signed-in browsers, so signing out revokes a cookie everywhere.

A cookie's MAC proves exod minted it; this list says it is still live. Logging
out (``POST /web/logout``) removes the browser's session here, so a copy of the
cookie taken before (another browser profile, a stolen backup) stops working
at once, while the other paired browsers stay signed in. The list survives a
restart of exod: it is a small private file in the Exo home,
``web-sessions.json``, holding a hash of each session id and when it expires
(the ids themselves are never written). At most :data:`MAX_SESSIONS` are kept;
a new one past that ends the one closest to expiring.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from exo_core.atomic import atomic_write_text

__all__ = ["WebSessions", "MAX_SESSIONS", "SESSIONS_FILE"]

MAX_SESSIONS = 64
SESSIONS_FILE = "web-sessions.json"

log = logging.getLogger(__name__)


class WebSessions:
    """Live browser sessions by hashed id; kept in ``path`` (only in memory when ``path`` is None)."""

    def __init__(self, path: Path | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._live: dict[str, int] = self._load()

    def add(self, sid: str, expires: int) -> None:
        """Record a new session ``sid`` that ends at ``expires`` (seconds since the epoch)."""
        with self._lock:
            self._prune()
            while len(self._live) >= MAX_SESSIONS:
                oldest = min(self._live, key=self._live.__getitem__)
                del self._live[oldest]
            self._live[_hash(sid)] = expires
            self._save()

    def live(self, sid: str) -> bool:
        """Whether ``sid`` was minted here, is unexpired and was not logged out."""
        expires = self._live.get(_hash(sid))
        return expires is not None and expires > self._clock()

    def revoke(self, sid: str) -> bool:
        """End ``sid`` (the browser logged out); whether it was live."""
        with self._lock:
            found = self._live.pop(_hash(sid), None) is not None
            self._prune()
            self._save()
        return found

    def _prune(self) -> None:
        now = self._clock()
        for key in [k for k, expires in self._live.items() if expires <= now]:
            del self._live[key]

    def _load(self) -> dict[str, int]:
        if self._path is None:
            return {}
        try:
            doc = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # An unreadable list signs every browser out (they pair again); it never lets one in.
            log.warning("%s is unreadable (%s); every browser must pair again", self._path, exc)
            return {}
        if not isinstance(doc, dict):
            return {}
        return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)}

    def _save(self) -> None:
        if self._path is not None:
            atomic_write_text(self._path, json.dumps(self._live, sort_keys=True) + "\n")


def _hash(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8", "replace")).hexdigest()
