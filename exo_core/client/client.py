"""The protocol client: commands over ``POST /command``, events over SSE, resuming.

Every client of exod (the line client, the device, scripts, tests) uses this.
It connects over the Unix socket (``unix:///path/exod.sock``) or TCP
(``http://host:port`` with a bearer token), decodes events loosely, and after a
dropped connection reconnects with ``Last-Event-ID`` set to the last seq it
saw, so it neither misses nor repeats an event.

A client that announces capabilities in ``hello`` gets a ``client_id`` back;
its event stream then asks for output shaped to those capabilities
(``?client=``), and it says hello again before resuming after a drop, so a
restarted core knows it again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from exo_core import errors
from exo_core.errors import BrokenResourceError, ExoError, MalformedMessageError
from exo_core.protocol import PROTOCOL_VERSION, Event, decode_event

__all__ = ["ExoClient", "error_from_wire"]

_BY_CODE: dict[str, type[ExoError]] = {}
for _name in errors.__all__:
    _cls = getattr(errors, _name)
    _BY_CODE.setdefault(_cls.code, _cls)


def error_from_wire(error: dict[str, Any] | None) -> ExoError:
    """The typed error for a response's ``error`` object."""
    error = error or {}
    cls = _BY_CODE.get(str(error.get("code")), ExoError)
    message = str(error.get("message", "unknown error"))
    if cls is errors.RetryableModelError:
        return errors.RetryableModelError(message)
    return cls(message, field=error.get("field"))


class ExoClient:
    """One connection to exod. Use ``async with ExoClient(url) as client``."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        client_name: str = "exo-client",
        capabilities: dict[str, Any] | None = None,
        reconnect_delay: float = 0.2,
        max_reconnect_delay: float = 5.0,
        stream_idle_timeout: float | None = 45.0,
    ) -> None:
        self.url = url
        # exod writes a keep-alive comment on an idle event stream every 15 s (``exo serve
        # --keepalive``). A link that died without a FIN or RST (Wi-Fi gone, a laptop asleep)
        # leaves the socket open with nothing on it; silence this long means it is dead, so the
        # stream breaks and reconnects instead of waiting forever. None waits forever.
        self._stream_idle_timeout = stream_idle_timeout
        self._token = token
        self._client_name = client_name
        self._capabilities = capabilities or {}
        self._reconnect_delay = reconnect_delay
        self._max_reconnect_delay = max_reconnect_delay
        self._ids = itertools.count(1)
        self._http: aiohttp.ClientSession | None = None
        self.last_seq = 0
        self.client_id: str | None = None
        if url.startswith("unix://"):
            self._socket: str | None = url[len("unix://") :]
            self._base = "http://localhost"
        elif url.startswith(("http://", "https://")):
            self._socket = None
            self._base = url.rstrip("/")
        else:
            raise errors.ConfigError(f"cannot connect to {url!r}: use unix:///path/exod.sock or http://host:port")

    @classmethod
    def for_socket(cls, path: Path, **kwargs: Any) -> ExoClient:
        """A client for a Unix socket path."""
        return cls(f"unix://{os.fspath(path)}", **kwargs)

    async def __aenter__(self) -> ExoClient:
        # force_close: a pooled keep-alive connection to a core that has since restarted would fail
        # the next command with a broken pipe, and a command cannot be retried blindly (it may
        # have run). A fresh connection per command costs little on a socket or a LAN.
        connector = (
            aiohttp.UnixConnector(path=self._socket, force_close=True)
            if self._socket
            else aiohttp.TCPConnector(force_close=True)
        )
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        self._http = aiohttp.ClientSession(
            connector=connector, headers=headers, timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            await self._http.close()
            self._http = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise errors.ClosedResourceError("client is not open; use 'async with ExoClient(...)'")
        return self._http

    async def request(self, command_type: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one command; returns its result or raises the typed error it carried."""
        payload = {"id": f"c{next(self._ids)}", "type": command_type, "body": body or {}}
        return (await self.post("/command", payload)).get("result") or {}

    async def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``path`` (``/command``, ``/pair``); the whole answer, or the typed error it carried."""
        try:
            async with self._session().post(
                self._base + path, json=payload, timeout=aiohttp.ClientTimeout(total=60)
            ) as resp:
                text = await resp.text()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise BrokenResourceError(f"cannot reach exod at {self.url}: {exc}") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedMessageError(f"exod answered with non-JSON (HTTP {resp.status})") from exc
        if not data.get("ok"):
            raise error_from_wire(data.get("error"))
        return data

    async def hello(self) -> dict[str, Any]:
        """The handshake: protocol version and this client's capabilities."""
        result = await self.request(
            "hello", {"protocol": PROTOCOL_VERSION, "client": self._client_name, "capabilities": self._capabilities}
        )
        if self._capabilities and isinstance(result.get("client_id"), str):
            self.client_id = result["client_id"]
        return result

    async def open_session(self, session: str | None = None, title: str = "") -> str:
        """Say hello, then check that ``session`` exists or create one called ``title``; returns its id.

        A new session's events come after the hello's ``last_seq``: nothing older is its own.
        """
        hello = await self.hello()
        if session is not None:
            await self.request("session.get", {"session": session, "messages": False})
            return session
        self.last_seq = int(hello["last_seq"])
        return str((await self.request("session.create", {"title": title}))["session"]["id"])

    async def health(self) -> dict[str, Any]:
        """``GET /health``."""
        try:
            async with self._session().get(self._base + "/health", timeout=aiohttp.ClientTimeout(total=10)) as resp:
                return await resp.json()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise BrokenResourceError(f"cannot reach exod at {self.url}: {exc}") from exc

    async def events(
        self, since: int | None = None, session: str | None = None, *, reconnect: bool = True
    ) -> AsyncIterator[Event]:
        """Events above ``since`` (default: the last seen), replayed then live; resumes after drops."""
        async for _data, event in self.raw_events(since, session, reconnect=reconnect):
            yield event

    async def raw_events(
        self, since: int | None = None, session: str | None = None, *, reconnect: bool = True
    ) -> AsyncIterator[tuple[str, Event]]:
        """Like :meth:`events`, with each event's exact JSON text as sent."""
        if since is not None:
            self.last_seq = since
        delay = self._reconnect_delay
        retrying = False
        while True:
            try:
                if retrying and self.client_id:
                    await self.hello()  # a restarted core learns our capabilities again
                retrying = True
                async for item in self._stream_once(session):
                    delay = self._reconnect_delay
                    yield item
                if not reconnect:
                    return
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                if not reconnect:
                    raise BrokenResourceError(f"event stream from {self.url} broke: {exc}") from exc
            except BrokenResourceError:
                if not reconnect:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max_reconnect_delay)

    async def _stream_once(self, session: str | None) -> AsyncIterator[tuple[str, Event]]:
        params = {"since": str(self.last_seq)}
        if session:
            params["session"] = session
        if self.client_id:
            params["client"] = self.client_id
        headers = {"Last-Event-ID": str(self.last_seq), "Accept": "text/event-stream"}
        async with self._session().get(
            self._base + "/events",
            params=params,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=self._stream_idle_timeout),
        ) as resp:
            if resp.status != 200:
                body = await resp.text()
                try:
                    raise error_from_wire(json.loads(body).get("error"))
                except json.JSONDecodeError:
                    raise BrokenResourceError(f"event stream refused: HTTP {resp.status}") from None
            data_lines: list[str] = []  # an event's data lines, until the blank line that ends it
            async for raw_line in resp.content:
                line = raw_line.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):  # other fields and ':' keep-alive comments are not used
                    data_lines.append(line[6:] if line.startswith("data: ") else line[5:])
                elif not line and data_lines:
                    data, data_lines = "\n".join(data_lines), []
                    event = decode_event(data)
                    if event.seq > self.last_seq:
                        self.last_seq = event.seq
                        yield data, event
