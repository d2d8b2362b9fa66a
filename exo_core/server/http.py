"""HTTP + Server-Sent Events: ``POST /command``, ``GET /events``, ``GET /health``.

The same aiohttp application serves the Unix socket (peer uid checked, no
token) and TCP (bearer token, Host and Origin checked). Request bodies over
8 MB are refused with a typed ``too_large`` error, bodies that do not arrive
within the body timeout with ``timeout`` (408); malformed input gets a typed
error with status 400 (:mod:`exo_core.protocol.safejson` lists what is
refused); an unexpected failure is ``internal`` (500) and the server keeps
serving. On TCP every request counts as in progress for the
:class:`~exo_core.server.limits.ConnectionGate` (idle connections are closed,
busy ones never). Responses name the server plainly (``Server: exod``), not
the versions of Python and aiohttp underneath.

On TCP a request is authenticated by the bearer token or, for a paired
browser, by a signed session cookie (:mod:`exo_core.web.cookies`: state-changing
requests also need this server's Origin and a CSRF header). The page, its
static files and the pairing exchange are public (the Host check still
applies); nothing ever reads a token from a URL.

``GET /events?since=N&session=S`` replays from the database and then follows
live events. ``Last-Event-ID`` (a browser's EventSource reconnect) takes
precedence over ``since``. A comment line is sent every ``keepalive`` seconds
so idle connections and proxies stay open.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web, web_response

from exo_core.engine.dispatch import Engine
from exo_core.engine.shaping import ClientProfile, shape_data
from exo_core.errors import (
    AccessDeniedError,
    BadBodyError,
    BearerTokenError,
    ClosedResourceError,
    ExoError,
    InternalError,
    MalformedMessageError,
    PayloadTooLargeError,
    UnknownCommandError,
)
from exo_core.events.hub import Hub, StoredEvent
from exo_core.protocol import MAX_BODY_BYTES, PROTOCOL_VERSION, ErrorInfo, Response
from exo_core.server.auth import HostPolicy, check_bearer, peer_uid
from exo_core.server.intake import answer_bytes, response_bytes
from exo_core.server.limits import ConnectionGate, ConnectionLimits, SlowClientError, read_body

if TYPE_CHECKING:
    from exo_core.web.cookies import WebAuth

__all__ = ["HttpSettings", "build_app", "SERVER_NAME"]

log = logging.getLogger(__name__)

SERVER_NAME = "exod"
# SQLite's INTEGER range: a larger 'since' once broke the event stream.
_MAX_SEQ = 2**63 - 1

# A command's error answer goes out as 200 (the exchange worked; the error is in the body) unless the
# request itself failed: then the HTTP status is that error class's own.
_REQUEST_FAILURES: tuple[type[ExoError], ...] = (
    BearerTokenError,
    SlowClientError,
    PayloadTooLargeError,
    MalformedMessageError,
    UnknownCommandError,
    BadBodyError,
    InternalError,
)
_STATUS = {failure.code: failure.http_status for failure in _REQUEST_FAILURES}

# Extra routes (the web page, later issues) register here: (method, path, handler).
RouteAdder = Callable[[web.Application], None]


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """How one listener authenticates and keeps streams alive."""

    token: str | None = None
    host_policy: HostPolicy | None = None
    check_peer_uid: bool = False
    keepalive: float = 15.0
    web: WebAuth | None = None
    limits: ConnectionLimits = ConnectionLimits()
    gate: ConnectionGate | None = None


def _error(status: int, code: str, message: str) -> web.Response:
    body = Response.failure(None, ErrorInfo(code, message)).to_json()
    return web.Response(status=status, text=body, content_type="application/json")


def build_app(
    engine: Engine, hub: Hub, settings: HttpSettings, *, extra_routes: tuple[RouteAdder, ...] = ()
) -> web.Application:
    """The aiohttp application for one listener."""

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if settings.gate is None:
            return await checked(request, handler)
        with settings.gate.request(request.transport):
            return await checked(request, handler)

    async def checked(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            if settings.check_peer_uid:
                sock = request.transport.get_extra_info("socket") if request.transport else None
                uid = peer_uid(sock) if sock is not None else None
                if uid is not None and uid != os.getuid():
                    raise AccessDeniedError("this socket serves only its owner")
            if settings.host_policy is not None:
                settings.host_policy.check(request.headers.get("Host"), request.headers.get("Origin"))
            if settings.token is not None:
                _authenticate(request, settings)
        except AccessDeniedError as exc:
            return _error(exc.http_status, exc.code, exc.message)
        return await handler(request)

    async def command(request: web.Request) -> web.Response:
        try:
            data = await read_body(request, limit=MAX_BODY_BYTES, timeout=settings.limits.body_timeout)
        except ExoError as exc:
            return _error(exc.http_status, exc.code, exc.message)
        if not data:
            return _error(400, "malformed", "empty body: POST one JSON command object")
        response = await answer_bytes(engine, data)
        status = 200 if response.ok else _STATUS.get(response.error.code if response.error else "", 200)
        return web.Response(status=status, body=response_bytes(response), content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "protocol": PROTOCOL_VERSION, "last_seq": hub.last_seq})

    async def events(request: web.Request) -> web.StreamResponse:
        raw_since = request.headers.get("Last-Event-ID") or request.query.get("since", "0")
        since = int(raw_since) if raw_since.isascii() and raw_since.isdigit() and len(raw_since) <= 19 else -1
        if not 0 <= since <= _MAX_SEQ:
            return _error(400, "bad_request", f"'since' and Last-Event-ID must be whole numbers from 0 to {_MAX_SEQ}")
        session = request.query.get("session") or None
        profile = engine.clients.get(request.query.get("client"))  # shaped to what the client can show
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        # The stream ends when the client goes away or the core shuts down (the client reconnects and resumes).
        with contextlib.suppress(ConnectionResetError, ClosedResourceError):
            async with hub.subscribe(since, session) as sub:
                await response.write(b": exo event stream\n\n")
                while True:
                    item = await sub.next(timeout=settings.keepalive)
                    if item is None:
                        await response.write(b": keep-alive\n\n")
                        continue
                    # Batch whatever else is already queued into the same write: one
                    # syscall per burst instead of one per event.
                    ready = [item]
                    sub.drain_ready(ready.append)
                    frames = [_frame(event, profile) for event in ready]
                    await response.write("".join(frames).encode("utf-8"))
        return response

    async def plain_server_header(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["Server"] = SERVER_NAME  # not "Python/3.x aiohttp/3.y": no versions for a prober

    # aiohttp's own answers to malformed HTTP never reach on_response_prepare; they take the name from
    # this module attribute (there is no option for it), so name the server there too.
    web_response.SERVER_SOFTWARE = SERVER_NAME
    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY_BYTES + 1024)
    app.on_response_prepare.append(plain_server_header)
    app.router.add_post("/command", command)
    app.router.add_get("/events", events)
    app.router.add_get("/health", health)
    for add in extra_routes:
        add(app)
    return app


def _frame(item: StoredEvent, profile: ClientProfile | None) -> str:
    """One Server-Sent Events frame: the event's number as its id, its JSON shaped for the client."""
    return f"id: {item.seq}\ndata: {shape_data(item.data, profile)}\n\n"


def _authenticate(request: web.Request, settings: HttpSettings) -> None:
    """TCP: the bearer token, or a paired browser's cookie; public paths pass."""
    assert settings.token is not None
    header = request.headers.get("Authorization")
    if settings.web is None or header is not None:
        check_bearer(header, settings.token)
    elif not settings.web.is_public(request.method, request.path):
        request["web_session"] = settings.web.check(request.method, request.cookies, request.headers)
