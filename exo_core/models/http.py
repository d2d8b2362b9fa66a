"""HTTP plumbing shared by the hosted transports: one session, SSE, error mapping.

aiohttp's errors are translated here, at the boundary, into the typed
provider errors of :mod:`exo_core.models.failures`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from exo_core.errors import ClosedResourceError
from exo_core.models.catalog import Timeouts
from exo_core.models.failures import (
    FailureKind,
    RetryableProviderError,
    error_for_status,
    parse_retry_after,
)

__all__ = ["HttpClient", "sse_events"]

_MAX_ERROR_BODY = 16 * 1024


class HttpClient:
    """A lazily created :class:`aiohttp.ClientSession` shared by every route.

    ``post_stream`` waits at most ``timeouts.first_byte`` for the response
    headers and ``timeouts.idle`` between body reads.
    """

    def __init__(self, timeouts: Timeouts = Timeouts()) -> None:
        self.timeouts = timeouts
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise ClosedResourceError("the model HTTP client was closed; build a new router")
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=None, connect=self.timeouts.connect,
                                            sock_read=self.timeouts.idle)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def aclose(self) -> None:
        """Close the session (idempotent)."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    @asynccontextmanager
    async def post_stream(self, url: str, *, headers: Mapping[str, str], body: Mapping[str, Any],
                          provider: str) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST ``body`` as JSON and yield the 2xx response; errors become provider errors."""
        session = self._get_session()
        try:
            ctx = session.post(url, json=body, headers=dict(headers))
            resp = await asyncio.wait_for(ctx.__aenter__(), self.timeouts.first_byte)
        except asyncio.TimeoutError as exc:
            raise RetryableProviderError(
                f"{provider}: no response within {self.timeouts.first_byte:g} s from {url}",
                kind=FailureKind.NETWORK, provider=provider) from exc
        except aiohttp.ClientError as exc:
            raise RetryableProviderError(
                f"{provider}: cannot reach {url} ({exc.__class__.__name__}: {exc}); is the "
                "server running and the base_url right?", kind=FailureKind.NETWORK,
                provider=provider) from exc
        try:
            if resp.status >= 400:
                try:
                    raw = await resp.content.read(_MAX_ERROR_BODY)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    raw = b""
                raise error_for_status(resp.status, _error_detail(raw), provider=provider,
                                       retry_after=parse_retry_after(resp.headers.get("Retry-After")))
            yield resp
        finally:
            await ctx.__aexit__(None, None, None)


def _error_detail(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
    return text


async def sse_events(resp: aiohttp.ClientResponse, *, provider: str) -> AsyncIterator[tuple[str, str]]:
    """``(event, data)`` pairs of a server-sent event stream; network failures typed.

    ``event`` is ``message`` when the server names none. Comments and
    ``id:``/``retry:`` fields are ignored.
    """
    event = "message"
    data: list[str] = []
    try:
        async for raw in resp.content:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            yield event, "\n".join(data)
    except asyncio.TimeoutError as exc:
        raise RetryableProviderError(f"{provider}: the stream stalled (no data for a while)",
                                     kind=FailureKind.NETWORK, provider=provider) from exc
    except aiohttp.ClientError as exc:
        raise RetryableProviderError(f"{provider}: the stream was cut ({exc.__class__.__name__})",
                                     kind=FailureKind.NETWORK, provider=provider) from exc
