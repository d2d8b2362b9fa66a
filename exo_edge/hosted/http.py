"""HTTP plumbing shared by the hosted transports: one session, SSE, status and error mapping, limits.

aiohttp's errors and HTTP error statuses are translated here, at the
boundary, into the typed provider errors of :mod:`exo_core.seams.failures`.

An engine is not trusted to behave (docs/security.md, "The laptop's engine"): each call waits at
most ``first_byte`` for the response headers, ``idle`` between two lines of the stream and ``total``
for the whole answer, and reads at most :data:`MAX_RESPONSE_BYTES`; an engine that hangs, streams
forever or sends too much is cut off with a typed error. A provider with a pinned ``tls_cert`` is
reached over TLS that trusts that certificate only; a ``serial`` one through its
:class:`~exo_edge.hosted.engine_gate.EngineGate` (one request at a time, the person's turn first).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError

from exo_core.errors import ClosedResourceError
from exo_core.seams.failures import FailureKind, ProviderError, RetryableProviderError
from exo_core.seams.link import pinned_context
from exo_core.seams.model import ModelRequest, Timeouts, ToolCall
from exo_edge.hosted.engine_gate import EngineGate, EnginePass, EnginePreempted

__all__ = [
    "HttpClient",
    "HostedTransport",
    "sse_events",
    "kind_for_status",
    "error_for_status",
    "parse_retry_after",
    "whole_call",
    "MAX_RESPONSE_BYTES",
]

_MAX_ERROR_BODY = 16 * 1024
# The most one answer's stream may send (bytes): a long answer with top_logprobs is well under 4 MiB.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_RETRYABLE = {FailureKind.RATE_LIMIT, FailureKind.SERVER, FailureKind.NETWORK}
_HINTS = {
    FailureKind.BAD_REQUEST: "the request was rejected as invalid; another route would fail the same way",
    FailureKind.AUTH: "check the API key in the provider's key variable",
    FailureKind.BILLING: "the account is out of credit",
    FailureKind.NOT_FOUND: "check the model name and base_url in the catalog or config.toml",
    FailureKind.RATE_LIMIT: "rate limited",
    FailureKind.SERVER: "the provider had a server error",
}


def kind_for_status(status: int) -> FailureKind:
    """The failure kind of an HTTP error status."""
    if status in (400, 413, 422):
        return FailureKind.BAD_REQUEST
    if status in (401, 403):
        return FailureKind.AUTH
    if status == 402:
        return FailureKind.BILLING
    if status == 404:
        return FailureKind.NOT_FOUND
    if status in (429, 529):  # 529: Anthropic "overloaded"
        return FailureKind.RATE_LIMIT
    if status in (408, 409, 425) or status >= 500:
        return FailureKind.SERVER
    return FailureKind.BAD_REQUEST


def error_for_status(
    status: int, detail: str, *, provider: str, retry_after: float | None = None
) -> ProviderError | RetryableProviderError:
    """The typed error for an HTTP error response, with a message that says what to do."""
    kind = kind_for_status(status)
    message = f"{provider}: HTTP {status}: {detail.strip()[:300] or 'no detail'} ({_HINTS.get(kind, '')})"
    if kind in _RETRYABLE:
        return RetryableProviderError(message, kind=kind, status=status, provider=provider, retry_after=retry_after)
    return ProviderError(message, kind=kind, status=status, provider=provider)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds)


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
            timeout = aiohttp.ClientTimeout(total=None, connect=self.timeouts.connect, sock_read=self.timeouts.idle)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def aclose(self) -> None:
        """Close the session (idempotent)."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    @asynccontextmanager
    async def post_stream(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        provider: str,
        tls: ssl.SSLContext | None = None,
        held: EnginePass | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST ``body`` as JSON and yield the 2xx response; errors become provider errors.

        ``tls``: the context that checks the server's certificate (None: the system's CAs). ``held``:
        the request's place at its engine, whose ``abort`` is pointed at this request while it runs.
        """
        session = self._get_session()
        pending = asyncio.ensure_future(session.post(url, json=body, headers=dict(headers), ssl=tls or True))
        if held is not None:
            held.abort = _canceller(pending)
        try:
            done, _ = await asyncio.wait({pending}, timeout=self.timeouts.first_byte)
        except BaseException:
            pending.cancel()
            raise
        if not done:
            pending.cancel()
            raise RetryableProviderError(
                f"{provider}: no response within {self.timeouts.first_byte:g} s from {url}",
                kind=FailureKind.NETWORK,
                provider=provider,
            )
        if pending.cancelled():  # the engine was taken for the person's turn before it answered
            raise RetryableProviderError(f"{provider}: preempted", kind=FailureKind.NETWORK, provider=provider)
        error = pending.exception()
        if isinstance(error, aiohttp.ClientError | ssl.SSLError | OSError):
            raise RetryableProviderError(
                f"{provider}: cannot reach {url} ({error.__class__.__name__}: {error}); is the "
                "server running, the base_url right and its tls_cert the engine's?",
                kind=FailureKind.NETWORK,
                provider=provider,
            ) from error
        resp = pending.result()
        if held is not None:
            held.abort = resp.close
        try:
            if resp.status >= 400:
                try:
                    raw = await asyncio.wait_for(resp.content.read(_MAX_ERROR_BODY), self.timeouts.idle)
                except (TimeoutError, aiohttp.ClientError):
                    raw = b""
                raise error_for_status(
                    resp.status,
                    _error_detail(raw),
                    provider=provider,
                    retry_after=parse_retry_after(resp.headers.get("Retry-After")),
                )
            yield resp
        finally:
            if held is not None:
                held.abort = None
            resp.release()


def _canceller(pending: asyncio.Future[Any]) -> Callable[[], None]:
    def cancel() -> None:
        pending.cancel()

    return cancel


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


async def sse_events(
    resp: aiohttp.ClientResponse, *, provider: str, timeouts: Timeouts = Timeouts(), limit: int = MAX_RESPONSE_BYTES
) -> AsyncIterator[tuple[str, str]]:
    """``(event, data)`` pairs of a server-sent event stream; network failures and limits typed.

    ``event`` is ``message`` when the server names none. Comments and
    ``id:``/``retry:`` fields are ignored. Each line must come within ``timeouts.idle``, the whole
    stream within ``timeouts.total`` and in at most ``limit`` bytes.
    """
    event = "message"
    data: list[str] = []
    deadline = time.monotonic() + timeouts.total
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _too_long(provider, f"was still streaming after {timeouts.total:g} s (the total cap)")
        try:
            raw = await asyncio.wait_for(resp.content.readline(), min(timeouts.idle, left))
        except TimeoutError as exc:
            if time.monotonic() >= deadline:
                raise _too_long(provider, f"was still streaming after {timeouts.total:g} s (the total cap)") from exc
            raise RetryableProviderError(
                f"{provider}: the stream stalled (nothing for {timeouts.idle:g} s)",
                kind=FailureKind.NETWORK,
                provider=provider,
            ) from exc
        except (ValueError, HttpProcessingError) as exc:  # aiohttp: a line longer than its buffer
            raise _too_long(provider, "sent a line longer than the stream's buffer") from exc
        except aiohttp.ClientError as exc:
            raise RetryableProviderError(
                f"{provider}: the stream was cut ({exc.__class__.__name__})",
                kind=FailureKind.NETWORK,
                provider=provider,
            ) from exc
        if not raw:
            break
        size += len(raw)
        if size > limit:
            raise _too_long(provider, f"sent more than {limit // 1024} KiB in one answer (the size cap)")
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


def _too_long(provider: str, what: str) -> RetryableProviderError:
    """The error for an engine cut off by a limit: a server fault, so the route rests and others answer."""
    return RetryableProviderError(f"{provider}: the engine {what}", kind=FailureKind.SERVER, provider=provider)


def whole_call(call_id: str, name: str, parts: list[str], provider: str) -> ToolCall:
    """A tool call from its streamed argument fragments; arguments that are not a JSON object fail."""
    text = "".join(parts).strip() or "{}"
    try:
        args = json.loads(text)
    except ValueError as exc:
        raise ProviderError(
            f"{provider}: tool call {name!r} has arguments that are not JSON: {text[:120]!r}",
            kind=FailureKind.SERVER,
            provider=provider,
        ) from exc
    if not isinstance(args, dict):
        raise ProviderError(
            f"{provider}: tool call {name!r} arguments are not an object", kind=FailureKind.SERVER, provider=provider
        )
    return ToolCall(call_id, name, args)


class HostedTransport:
    """What both hosted transports share: one route and credential, the POST, the SSE stream.

    Subclasses give the endpoint ``PATH``, the request ``body`` and the
    ``headers``, and turn the :meth:`events` into seam chunks. ``DONE`` is a
    data line that ends the stream without being JSON (OpenAI's ``[DONE]``).
    """

    PATH = ""
    DONE: str | None = None

    def __init__(
        self,
        client: HttpClient,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        provider: str,
        tls_cert: str = "",
        gate: EngineGate | None = None,
    ) -> None:
        self.client = client
        self.url = base_url.rstrip("/") + self.PATH
        self.model = model
        self.api_key = api_key
        self.provider = provider
        self.tls = pinned_context(tls_cert) if tls_cert else None
        self.gate = gate

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of ``request`` in the provider's shape."""
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        """The request headers (content type, the credential)."""
        raise NotImplementedError

    async def events(self, request: ModelRequest) -> AsyncGenerator[tuple[str, Any], None]:
        """``(event, parsed JSON data)`` for each SSE event of one call (``None`` for :attr:`DONE`).

        Through the engine's gate when it has one: a background request preempted before the engine
        sent anything waits for its next turn and is sent again; one preempted later fails with
        :class:`EnginePreempted` (its caller asks again later; nothing is spliced).
        """
        if self.gate is None:
            async with aclosing(self._events(request, None)) as events:
                async for item in events:
                    yield item
            return
        while True:
            async with self.gate.turn(background=request.background) as held:
                sent = False
                try:
                    async with aclosing(self._events(request, held)) as events:
                        async for item in events:
                            sent = True
                            yield item
                    if not held.preempted:
                        return
                except (RetryableProviderError, ProviderError):
                    if not held.preempted:
                        raise
                if sent:
                    raise EnginePreempted(self.provider)

    async def _events(self, request: ModelRequest, held: EnginePass | None) -> AsyncGenerator[tuple[str, Any], None]:
        async with self.client.post_stream(
            self.url, headers=self.headers(), body=self.body(request), provider=self.provider, tls=self.tls, held=held
        ) as resp:
            if resp.content_type != "text/event-stream":
                # A web page or a proxy's answer at the base_url, or a server that ignored "stream": true.
                raise RetryableProviderError(
                    f"{self.provider}: {self.url} answered {resp.content_type or 'no Content-Type'}, not an event "
                    "stream; is base_url an OpenAI-compatible API (ending in /v1)?",
                    kind=FailureKind.SERVER,
                    status=resp.status,
                    provider=self.provider,
                )
            async for event, data in sse_events(resp, provider=self.provider, timeouts=self.client.timeouts):
                if self.DONE is not None and data.strip() == self.DONE:
                    yield event, None
                    continue
                try:
                    obj = json.loads(data)
                except ValueError as exc:
                    raise RetryableProviderError(
                        f"{self.provider}: the stream sent bad JSON ({data[:80]!r})",
                        kind=FailureKind.SERVER,
                        provider=self.provider,
                    ) from exc
                yield event, obj

    def cut(self, what: str) -> RetryableProviderError:
        """The error for a stream that ended before ``what`` was finished (a network failure)."""
        return RetryableProviderError(
            f"{self.provider}: the stream ended before the {what} was finished",
            kind=FailureKind.NETWORK,
            provider=self.provider,
        )
