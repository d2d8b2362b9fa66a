"""exod's transports: the Unix socket, optionally TCP (with the web page) and stdio, over one engine.

:func:`serve_transports` binds the listeners, serves ``POST /command``,
``GET /events`` and ``GET /health`` (:mod:`exo_core.server.http`) and stdio
lines (:mod:`exo_core.server.stdio`) over an engine and its hub until ``stop``
is set (or stdin closes in stdio mode), then stops them: the ``closing`` hooks
first, then the live event streams, then the listeners. What is served, the
core and its services, is assembled by the composition root
(:mod:`exo_core.daemon`, docs/architecture.md "Layers"); this module knows only
the engine's public surface (:class:`~exo_core.engine.dispatch.Engine`, the
:class:`~exo_core.events.hub.Hub`) and the transports.

With ``tcp`` set, the TCP listener also serves the web page and pairing
(:mod:`exo_core.web`), and exod prints its address and a first pairing code.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from aiohttp import web

from exo_core.atomic import atomic_write_text
from exo_core.engine.dispatch import Engine
from exo_core.events.hub import Hub
from exo_core.seams.home import ExoHome
from exo_core.server.auth import HostPolicy, load_or_create_token
from exo_core.server.http import HttpSettings, build_app
from exo_core.server.limits import (
    TCP_BACKLOG,
    ConnectionGate,
    ConnectionLimits,
    raise_fd_limit,
    tcp_connection_cap,
)
from exo_core.server.listeners import bind_tcp, bind_unix
from exo_core.server.quietlog import QuietFilter
from exo_core.server.stdio import serve_stdio

if TYPE_CHECKING:
    from exo_core.web import PairingCodes

__all__ = ["TransportSettings", "serve_transports"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TransportSettings:
    """Which transports to serve, and the limits of the TCP one."""

    tcp: tuple[str, int] | None = None
    stdio: bool = False
    unix: bool = True
    allowed_hosts: tuple[str, ...] = ()
    keepalive: float = 15.0
    limits: ConnectionLimits = ConnectionLimits()


async def serve_transports(
    engine: Engine,
    hub: Hub,
    home: ExoHome,
    settings: TransportSettings,
    *,
    stop: asyncio.Event,
    store_root: Path | None = None,
    ready: asyncio.Event | None = None,
    closing: Sequence[Callable[[], Awaitable[None]]] = (),
) -> None:
    """Serve ``engine`` and ``hub`` on the transports ``settings`` names until ``stop`` (or stdin closes).

    ``store_root`` is the store folder the web page browses; ``ready`` is set once
    every listener accepts connections; ``closing`` runs first at shutdown, before
    the event streams end and the listeners stop.
    """
    runners: list[web.AppRunner] = []
    bound_unix = False
    fd_limit = raise_fd_limit()
    _quiet_library_logs()
    from exo_core.web import PairingCodes, WebAuth, tcp_routes, unix_routes
    from exo_core.web.sessions import SESSIONS_FILE, WebSessions

    codes = PairingCodes()
    addresses: tuple[str, ...] = ()
    try:
        # TCP first: the Unix socket accepting connections is the signal that exod is up.
        if settings.tcp is not None:
            token = load_or_create_token(home.token_path)
            host, port = settings.tcp
            sock = bind_tcp(host, port)
            bound_port = sock.getsockname()[1]
            names = _lan_names() if host in ("0.0.0.0", "::", "") else ()
            policy = HostPolicy(host, bound_port, extra_names=(*settings.allowed_hosts, *names))
            auth = WebAuth(token, bound_port, sessions=WebSessions(home.root / SESSIONS_FILE))
            limits = settings.limits
            gate = ConnectionGate(limits, total_cap=tcp_connection_cap(limits, fd_limit))
            http_settings = HttpSettings(
                token=token, host_policy=policy, keepalive=settings.keepalive, web=auth, limits=limits, gate=gate
            )
            app = build_app(
                engine,
                hub,
                http_settings,
                extra_routes=(tcp_routes(auth, codes, token, store_root, limits=limits),),
            )
            runners.append(await _start(app, sock, gate=gate))
            log.info(
                "TCP limits: %d connections (%d per address), %.0f s to send a request, open-file limit %d",
                gate.total_cap,
                limits.max_per_address,
                limits.header_timeout,
                fd_limit,
            )
            home.run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(home.run_dir / "tcp.port", f"{bound_port}\n")
            log.info("exod listening on %s:%d", host, bound_port)
            addresses = tuple(_url(n, bound_port) for n in (names or (host,)))
            _announce(addresses, codes, to=sys.stderr if settings.stdio else sys.stdout)
        if settings.unix:
            sock = bind_unix(home.socket_path)
            bound_unix = True
            app = build_app(
                engine,
                hub,
                HttpSettings(check_peer_uid=True, keepalive=settings.keepalive),
                extra_routes=(unix_routes(codes, addresses),),
            )
            runners.append(await _start(app, sock))
            log.info("exod listening on %s", home.socket_path)
        if ready is not None:
            ready.set()
        if settings.stdio:
            stdio_task = asyncio.create_task(serve_stdio(engine, hub))
            stop_task = asyncio.create_task(stop.wait())
            await asyncio.wait({stdio_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
            for t in (stdio_task, stop_task):
                t.cancel()
        else:
            await stop.wait()
    finally:
        for close in closing:
            await close()
        hub.close_streams()
        for runner in runners:
            await runner.cleanup()
        if bound_unix:
            # Only the daemon that bound the socket removes it; a refused second one must not.
            home.socket_path.unlink(missing_ok=True)


def _url(name: str, port: int) -> str:
    return f"http://[{name}]:{port}" if ":" in name and not name.startswith("[") else f"http://{name}:{port}"


def _lan_names() -> tuple[str, ...]:
    """Names and addresses a laptop on the LAN may use for this machine (for a wildcard bind)."""
    found: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: picks the outbound interface, sends nothing
            found.append(probe.getsockname()[0])
        except OSError:
            log.info("no route to a LAN; only local names are accepted as Host")
    hostname = socket.gethostname()
    found += [hostname, f"{hostname}.local"]
    return tuple(dict.fromkeys(n for n in found if n and not n.startswith("127.")))


def _announce(addresses: tuple[str, ...], codes: PairingCodes, *, to: TextIO) -> None:
    """Print where exod listens and how to pair (a first code, valid a few minutes)."""
    issued = codes.issue()
    lines = [
        f"exod: listening on {', '.join(addresses)}",
        f"exod: pair a browser: open {addresses[0]}/ and enter the code {issued.code} "
        f"(single use, valid {issued.expires_in / 60:.0f} min)",
        f"exod: pair a terminal on the laptop: exo pair --connect {addresses[0]}",
        "exod: a fresh code any time: run `exo pair` on this machine",
    ]
    print("\n".join(lines), file=to, flush=True)


def _quiet_library_logs() -> None:
    """Put asyncio's and aiohttp's per-connection error reports through a QuietLog (docs/security.md).

    Both log once per failing connection or accept (``EMFILE`` tracebacks, "Error
    handling request" for every malformed request), so a peer could fill the disk.
    """
    for name in ("asyncio", "aiohttp.server", "aiohttp.web"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietFilter) for f in logger.filters):
            logger.addFilter(QuietFilter())


async def _start(app: web.Application, sock: socket.socket, *, gate: ConnectionGate | None = None) -> web.AppRunner:
    if gate is None:
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        return runner
    # TCP: aiohttp's own keep-alive close matches the gate's idle timeout (its default is an hour).
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=5.0,
        keepalive_timeout=gate.limits.header_timeout,
    )
    await runner.setup()
    await _GatedSite(runner, sock, gate).start()
    return runner


class _GatedSite(web.SockSite):
    """A socket site whose every connection passes the :class:`ConnectionGate` first."""

    def __init__(self, runner: web.AppRunner, sock: socket.socket, gate: ConnectionGate) -> None:
        super().__init__(runner, sock, shutdown_timeout=5.0, backlog=TCP_BACKLOG)
        self._gate = gate

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner (stopped by runner.cleanup)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._gate.wrap(server), sock=self._sock, backlog=self._backlog
        )
