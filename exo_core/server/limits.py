"""What one peer on the LAN may cost exod: connection caps, idle and body timeouts, file descriptors.

Attacked on purpose, 1,300 idle unauthenticated TCP connections stayed open for
130 s; 300 of them filled the file-descriptor table, after which the owner's
Unix socket stopped answering and asyncio logged 223,734 ``EMFILE`` tracebacks.
The TCP listener now goes through a :class:`ConnectionGate`:

* **Caps**: at most ``max_per_address`` open connections per source (an IPv4
  address, an IPv6 /64) and ``max_total`` in all; a connection over a cap is
  closed as soon as it is accepted. The total is also held below the process's
  file-descriptor limit (:func:`tcp_connection_cap`), keeping headroom for the
  Unix socket, the databases and the tools, which :func:`raise_fd_limit` first
  raises to the hard limit.
* **Idle timeout**: a connection with no request in progress must complete a
  request's headers within ``header_timeout`` seconds of opening (or of its
  previous response), so slowly dribbled headers (slowloris) or a silent
  socket are closed. A request in progress (an event stream, a running command)
  is never cut by it.
* **Body timeout** (``body_timeout``, used by the handlers that read a body) and
  a small body limit for routes anyone may call (``public_body_bytes``).

Refusals are logged through a :class:`~exo_core.server.quietlog.QuietLog`: one
line per kind per window, however many connections are refused.

What this does not stop: a flood of SYNs filling the kernel's listen backlog, or
many sources (a botnet on the LAN) each under its cap. See docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from exo_core.errors import ConfigError, PayloadTooLargeError, UsageError
from exo_core.server.quietlog import QuietLog

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "TCP_BACKLOG",
    "ConnectionGate",
    "ConnectionLimits",
    "SlowClientError",
    "raise_fd_limit",
    "read_body",
    "source_key",
    "tcp_connection_cap",
]

log = logging.getLogger(__name__)

# File descriptors kept free for everything that is not a TCP client: the Unix
# socket and its clients, SQLite files and their journals, the model, tool processes.
_FD_HEADROOM_MIN = 128
# The TCP listen backlog, which is also how many connections asyncio accepts in one
# go before the gate can close any of them: the fd headroom must cover that burst.
TCP_BACKLOG = 16


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Limits of the TCP listener (``exo serve --tcp-max-connections`` and friends)."""

    max_total: int = 256
    max_per_address: int = 32
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    public_body_bytes: int = 4096

    def __post_init__(self) -> None:
        if min(self.max_total, self.max_per_address, self.public_body_bytes) < 1:
            raise ConfigError("TCP connection caps and body limits must be at least 1")
        if not (self.header_timeout > 0 and self.body_timeout > 0):
            raise ConfigError("TCP timeouts must be positive numbers of seconds")


class SlowClientError(UsageError):
    """The client did not send its request body within the body timeout (HTTP 408)."""

    code = "timeout"
    http_status = 408


async def read_body(request: web.Request, *, limit: int, timeout: float) -> bytes:
    """The request's body: at most ``limit`` bytes, all of it within ``timeout`` seconds, or a typed error."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise PayloadTooLargeError(f"body of {declared} bytes exceeds the limit of {limit} bytes")
    data = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while len(data) <= limit:
                chunk = await request.content.read(min(64 * 1024, limit + 1 - len(data)))
                if not chunk:
                    return bytes(data)
                data += chunk
    except TimeoutError as exc:
        raise SlowClientError(f"the request body did not arrive within {timeout:.0f} s; send it at once") from exc
    raise PayloadTooLargeError(f"body exceeds the limit of {limit} bytes")


def raise_fd_limit() -> int:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit where allowed; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft == resource.RLIM_INFINITY or (target != resource.RLIM_INFINITY and soft >= target):
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:  # a container may refuse; the cap below still keeps headroom
        log.info("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
        return soft
    return target


def tcp_connection_cap(limits: ConnectionLimits, fd_soft_limit: int) -> int:
    """How many TCP connections may be open at once: the configured total, well below the fd limit."""
    headroom = max(_FD_HEADROOM_MIN, fd_soft_limit // 4) + TCP_BACKLOG
    return max(1, min(limits.max_total, fd_soft_limit - headroom))


def source_key(peer: Any) -> str:
    """Who a peer counts as for the per-address cap: its IPv4 address, or its IPv6 /64."""
    host = peer[0] if isinstance(peer, tuple) and peer else str(peer)
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return str(host)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class ConnectionGate:
    """Counts TCP connections per source, refuses those over a cap, closes idle ones."""

    def __init__(self, limits: ConnectionLimits, *, total_cap: int, quiet: QuietLog | None = None) -> None:
        self.limits = limits
        self.total_cap = total_cap
        self._quiet = quiet or QuietLog(log)
        self._per_source: dict[str, int] = {}
        self._open: dict[int, _Guarded] = {}  # id(transport) -> its guard
        self.refused = 0

    @property
    def open_connections(self) -> int:
        """How many admitted connections are open now."""
        return len(self._open)

    def wrap(self, inner_factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` that puts every connection through this gate."""
        return lambda: _Guarded(self, inner_factory)

    @contextlib.contextmanager
    def request(self, transport: Any) -> Iterator[None]:
        """Mark a request in progress on ``transport`` (the idle timeout waits until it ends)."""
        guard = self._open.get(id(transport))
        if guard is None:
            yield
            return
        guard.busy += 1
        try:
            yield
        finally:
            guard.busy -= 1
            guard.idle_since = asyncio.get_running_loop().time()

    def _admit(self, source: str) -> bool:
        if len(self._open) >= self.total_cap:
            self._refuse("total cap of %d connections reached", self.total_cap, source)
            return False
        if self._per_source.get(source, 0) >= self.limits.max_per_address:
            self._refuse("per-address cap of %d reached", self.limits.max_per_address, source)
            return False
        self._per_source[source] = self._per_source.get(source, 0) + 1
        return True

    def _refuse(self, why: str, cap: int, source: str) -> None:
        self.refused += 1
        self._quiet.warning(
            f"tcp: connections refused ({why % cap})", "refusing a TCP connection from %s: " + why, source, cap
        )

    def _opened(self, guard: _Guarded) -> None:
        self._open[id(guard.transport)] = guard

    def _closed(self, guard: _Guarded) -> None:
        self._open.pop(id(guard.transport), None)
        left = self._per_source.get(guard.source, 0) - 1
        if left > 0:
            self._per_source[guard.source] = left
        else:
            self._per_source.pop(guard.source, None)

    def _idle_too_long(self, source: str) -> None:
        self._quiet.warning(
            "tcp: idle connections closed",
            "closing a TCP connection from %s: no complete request within %.0f s",
            source,
            self.limits.header_timeout,
        )


class _Guarded(asyncio.Protocol):
    """Stands between the transport and aiohttp's protocol: admission, then the idle check."""

    def __init__(self, gate: ConnectionGate, inner_factory: Callable[[], asyncio.Protocol]) -> None:
        self._gate = gate
        self._inner_factory = inner_factory
        self._inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.source = ""
        self.busy = 0
        self.idle_since = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.source = source_key(transport.get_extra_info("peername"))
        if not self._gate._admit(self.source):
            transport.abort()  # its fd is released at once; aiohttp never sees it
            return
        self._gate._opened(self)
        loop = asyncio.get_running_loop()
        self.idle_since = loop.time()
        self._timer = loop.call_later(self._gate.limits.header_timeout, self._check_idle)
        self._inner = self._inner_factory()
        self._inner.connection_made(transport)

    def _check_idle(self) -> None:
        self._timer = None
        if self.transport is None or self.transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        due = self.idle_since + self._gate.limits.header_timeout
        if self.busy == 0 and loop.time() >= due:
            self._gate._idle_too_long(self.source)
            self.transport.abort()
            return
        next_check = max(due - loop.time(), 0.05) if self.busy == 0 else self._gate.limits.header_timeout
        self._timer = loop.call_later(next_check, self._check_idle)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._inner is None:
            return  # refused at admission
        self._gate._closed(self)
        self._inner.connection_lost(exc)
