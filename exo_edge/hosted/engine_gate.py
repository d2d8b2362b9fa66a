"""One request at a time to one engine, the person's turn first.

exod asks one engine (the laptop's) from several places at once: the chat turn, the signal decision
and the proposal queue's drainer (in a thread of its own, with its own event loop). Engines differ in
what a second request does to the first: llama-cpp-python's server ends the running stream with a bare
``[DONE]`` (``interrupt_requests``, on by default), ``llama-server`` splits its context between slots,
Ollama queues beyond ``OLLAMA_NUM_PARALLEL``, vLLM batches (docs/models.md, "Concurrency"). So exod does
not depend on any of it: an :class:`EngineGate` lets one request at a time reach an engine, and a
request of the person's turn goes before every waiting background one. A background request already
running when the person's turn arrives is *preempted*: its connection is closed (the engine stops
generating for it) and its caller is told so with :class:`EnginePreempted`, or, when the engine had not
yet sent anything, the request simply waits for its next turn and is sent again.

The gates are shared by every router in the process (:data:`ENGINE_GATES`, keyed by the engine's
origin), because the routers of the turn, the decision and the drainer are built apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from exo_core.seams.failures import FailureKind, RetryableProviderError

__all__ = ["EngineGate", "EngineGates", "EnginePass", "EnginePreempted", "ENGINE_GATES"]

# How long a preempted background caller rests before asking again (the router's rate-limit probe rule).
PREEMPTED_RETRY_AFTER = 2.0


class EnginePreempted(RetryableProviderError):
    """A background request was cut off after output had started, because the person's turn needed the engine."""

    def __init__(self, provider: str) -> None:
        super().__init__(
            f"{provider}: the engine was needed for the person's turn; this background request is asked again later",
            kind=FailureKind.RATE_LIMIT,
            provider=provider,
            retry_after=PREEMPTED_RETRY_AFTER,
        )


@dataclass(eq=False, slots=True)
class EnginePass:
    """One request's place at an engine: granted, then possibly preempted (background requests only)."""

    background: bool
    loop: asyncio.AbstractEventLoop
    granted: asyncio.Future[None]
    preempted: bool = False
    # Set by the request while it talks to the engine: closes its connection (runs in ``loop``).
    abort: Callable[[], None] | None = field(default=None)

    def _preempt_here(self) -> None:
        # Runs in the holder's own loop, so it cannot race the request's own release.
        self.preempted = True
        if self.abort is not None:
            self.abort()


class EngineGate:
    """The gate of one engine. Thread-safe: its holders and waiters may run in different event loops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: EnginePass | None = None
        self._waiting: list[EnginePass] = []

    @property
    def busy(self) -> bool:
        """Whether a request holds the engine now."""
        with self._lock:
            return self._holder is not None

    @asynccontextmanager
    async def turn(self, *, background: bool) -> AsyncIterator[EnginePass]:
        """Hold the engine for one request; a person's request preempts a background holder."""
        loop = asyncio.get_running_loop()
        ticket = EnginePass(background, loop, loop.create_future())
        with self._lock:
            holder = self._holder
            if holder is None:
                self._holder = ticket
                ticket.granted.set_result(None)
            else:
                self._waiting.append(ticket)
                if not background and holder.background:
                    with contextlib.suppress(RuntimeError):  # its loop is closing: it is leaving anyway
                        holder.loop.call_soon_threadsafe(holder._preempt_here)
        try:
            await ticket.granted
        except BaseException:
            self._leave(ticket)
            raise
        try:
            yield ticket
        finally:
            self._leave(ticket)

    def _leave(self, ticket: EnginePass) -> None:
        """Give the engine up (or stop waiting for it); the next person's request goes first."""
        with self._lock:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                return
            if self._holder is not ticket:
                return
            following = next((t for t in self._waiting if not t.background), None)
            if following is None and self._waiting:
                following = self._waiting[0]
            self._holder = following
            if following is None:
                return
            self._waiting.remove(following)
        try:
            following.loop.call_soon_threadsafe(_grant, following.granted)
        except RuntimeError:  # its loop closed while it waited: it will never take the engine
            self._leave(following)


def _grant(granted: asyncio.Future[None]) -> None:
    if not granted.done():  # a waiter cancelled meanwhile leaves through EngineGate._leave
        granted.set_result(None)


def engine_origin(base_url: str) -> str:
    """The engine a base URL names: scheme, host and port (two paths on one server share one engine)."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class EngineGates:
    """The gate of each engine, made on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[str, EngineGate] = {}

    def gate(self, base_url: str) -> EngineGate:
        """The gate of the engine at ``base_url``."""
        origin = engine_origin(base_url)
        with self._lock:
            gate = self._gates.get(origin)
            if gate is None:
                gate = self._gates[origin] = EngineGate()
            return gate


# Every router of this process shares these: the engine is one, whoever asks it.
ENGINE_GATES = EngineGates()
