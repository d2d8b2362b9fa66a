"""Browser sessions on TCP: a signed HttpOnly cookie, a CSRF header, and the public paths.

A paired browser holds a cookie ``exo_<port>=<sid>.<expires>.<mac>`` where
``mac`` is an HMAC-SHA256 under a key derived from the server's bearer token.
The cookie is therefore bound to this server (another exod, or this one after
its token is rotated, refuses it), and is ``HttpOnly`` (scripts cannot read
it) and ``SameSite=Strict`` (a browser never sends it on a request started by
another site). The session must also be in the server's list of live
sessions (:class:`~exo_core.web.sessions.WebSessions`, kept in the Exo home so
it survives a restart): logging out removes it, so a copy of the cookie stops
working too.

Every request authenticated by the cookie that changes state (any method but
GET/HEAD) must also carry ``Origin`` naming this server (checked by the Host
policy) and ``X-Exo-CSRF``: an HMAC of the session id that the page reads from
``GET /web/session`` (a same-origin read a foreign page cannot make).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping

from exo_core.errors import AccessDeniedError
from exo_core.web.sessions import WebSessions

__all__ = ["WebAuth", "CrossSiteError", "NotSignedInError", "CSRF_HEADER"]

CSRF_HEADER = "X-Exo-CSRF"
_PUBLIC_GET = frozenset({"/", "/index.html", "/favicon.ico"})
_SAFE_METHODS = frozenset({"GET", "HEAD"})


class CrossSiteError(AccessDeniedError):
    """A state-changing request without this server's Origin and CSRF header (HTTP 403)."""

    http_status = 403


class NotSignedInError(AccessDeniedError):
    """No bearer token and no valid session cookie (HTTP 401)."""

    http_status = 401


class WebAuth:
    """Mints and checks browser session cookies for one TCP listener."""

    def __init__(
        self,
        token: str,
        port: int,
        *,
        max_age: int = 30 * 24 * 3600,
        clock: Callable[[], float] = time.time,
        sessions: WebSessions | None = None,
    ) -> None:
        self._key = hmac.new(token.encode("utf-8"), b"exo-web-session-v1", hashlib.sha256).digest()
        self.port = port
        self.cookie_name = f"exo_{port}"
        self.max_age = max_age
        self._clock = clock
        # None: a list in memory only (every browser pairs again after a restart).
        self.sessions = sessions if sessions is not None else WebSessions(clock=clock)

    @staticmethod
    def is_public(method: str, path: str) -> bool:
        """The page, its static files and the pairing exchange need no session."""
        if method in _SAFE_METHODS:
            return path in _PUBLIC_GET or path.startswith("/static/")
        return method == "POST" and path == "/pair"

    def _mac(self, message: str) -> str:
        digest = hmac.new(self._key, message.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def mint(self) -> tuple[str, str]:
        """A new session: ``(cookie value, csrf token)``."""
        sid = secrets.token_urlsafe(16)
        expires = int(self._clock()) + self.max_age
        body = f"{sid}.{expires}"
        mac = self._mac(f"cookie|{self.port}|{body}")
        self.sessions.add(sid, expires)
        return f"{body}.{mac}", self.csrf_for(sid)

    def revoke(self, sid: str) -> bool:
        """End session ``sid`` on the server (logout): its cookie, and every copy of it, stops working."""
        return self.sessions.revoke(sid)

    def csrf_for(self, sid: str) -> str:
        """The CSRF token of session ``sid``."""
        return self._mac(f"csrf|{self.port}|{sid}")

    def session_of(self, cookies: Mapping[str, str]) -> str | None:
        """The session id of a valid, unexpired cookie of a live (not logged out) session, else ``None``."""
        value = cookies.get(self.cookie_name)
        # Cookies this server mints are ASCII; anything else (bytes that are not UTF-8 arrive as
        # lone surrogates) is refused before it reaches the MAC, which once answered it with a 500.
        if not value or not value.isascii() or value.count(".") != 2:
            return None
        sid, expires, mac = value.split(".")
        expected = self._mac(f"cookie|{self.port}|{sid}.{expires}")
        valid = hmac.compare_digest(mac.encode("ascii", "replace"), expected.encode("ascii"))
        if not (valid and expires.isdigit() and int(expires) > self._clock()):
            return None
        return sid if self.sessions.live(sid) else None

    def check(self, method: str, cookies: Mapping[str, str], headers: Mapping[str, str]) -> str:
        """Authenticate a request by its cookie; returns the session id or raises."""
        sid = self.session_of(cookies)
        if sid is None:
            raise NotSignedInError(
                "missing bearer token and no valid session cookie: pair this browser with a code from `exo pair`"
            )
        if method not in _SAFE_METHODS:
            if not headers.get("Origin"):
                raise CrossSiteError(
                    "cross-site request refused: a cookie-authenticated request that changes "
                    "state must carry this server's Origin"
                )
            offered = headers.get(CSRF_HEADER, "")
            if not hmac.compare_digest(offered.encode("ascii", "replace"), self.csrf_for(sid).encode("ascii")):
                raise CrossSiteError(f"cross-site request refused: missing or wrong {CSRF_HEADER} header")
        return sid

    def cookie_header(self, value: str = "") -> str:
        """The ``Set-Cookie`` value for a new session; without ``value``, the one that ends it in this browser."""
        return f"{self.cookie_name}={value}; max-age={self.max_age if value else 0}; Path=/; HttpOnly; SameSite=Strict"
