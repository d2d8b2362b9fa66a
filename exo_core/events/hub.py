"""The hub: numbers every event, saves it, and only then hands it to subscribers.

Properties (docs/protocol.md):

1. ``seq`` is dense and strictly rising across the whole stream and across
   restarts (it continues from ``MAX(seq)`` of the events table, whose rows are
   never updated or deleted).
2. Nothing is shown that was not first saved: events are committed (group
   commit: one transaction, one fsync for every event emitted meanwhile) before
   any subscriber sees them.
3. Replay is a database read. A :class:`Subscription` registers for live events
   *before* reading the database, then drops live events it already replayed,
   so the switch from replay to live has no gap and no duplicate.

An event is encoded when it is emitted, not when its batch is written: a body
that cannot be stored (text that is not valid Unicode, a NaN) is refused to
its caller with a typed error and never joins a batch, so it cannot fail the
other callers' events.

Every client receives the exact stored JSON text, so two clients replaying from
0 receive byte-identical events.

Back-pressure: each live subscriber has a bounded queue (``queue_limit``). A
subscriber that falls behind is marked lagged and its queue dropped; on its
next read it replays the missed events from the database and rejoins live.
A slow client therefore costs a database read, never unbounded memory.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exo_core.clock import Clock, SystemClock, iso_utc
from exo_core.errors import BadBodyError, ClosedResourceError, InternalError, StorageError
from exo_core.ids import IdFactory, RandomIds
from exo_core.protocol import EVENTS, Event, body_to_wire, canonical_json
from exo_core.sessions.db import write_transaction
from exo_core.sessions.worker import DbWorker

__all__ = ["Hub", "Subscription", "StoredEvent"]

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored and sent: its number, session and exact JSON text."""

    seq: int
    session: str | None
    data: str


class _Live:
    """One live subscriber's bounded queue."""

    __slots__ = ("session", "queue", "lagged", "closed")

    def __init__(self, session: str | None, limit: int) -> None:
        self.session = session
        # One spare slot so the shutdown wake-up always fits.
        self.queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue(maxsize=limit + 1)
        self.lagged = False
        self.closed = False

    def offer(self, item: StoredEvent) -> None:
        if self.lagged or (self.session is not None and item.session != self.session):
            return
        if self.queue.qsize() >= self.queue.maxsize - 1:
            # Policy: drop the queue and fall back to replay from the database.
            self.lagged = True
            return
        self.queue.put_nowait(item)


class Hub:
    """Numbers, stores and fans out events. Owns nothing but the event stream."""

    def __init__(
        self, worker: DbWorker, *, clock: Clock | None = None, ids: IdFactory | None = None, queue_limit: int = 1024
    ) -> None:
        self._worker = worker
        self._clock = clock or SystemClock()
        self._ids = ids or RandomIds()
        self._queue_limit = queue_limit
        self._next_seq: int | None = None
        self._pending: list[tuple[str | None, str, dict[str, Any], str, asyncio.Future[Event]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._live: set[_Live] = set()
        self._closed = False
        self._reader: sqlite3.Connection | None = None
        self._reader_lock = asyncio.Lock()

    async def start(self) -> None:
        """Load the last seq from the database."""
        last = await self._worker.run(
            lambda: self._worker.connection.execute("SELECT MAX(seq) FROM events").fetchone()[0]
        )
        self._next_seq = (last or 0) + 1

    @property
    def last_seq(self) -> int:
        """The number of the last event saved."""
        if self._next_seq is None:
            raise ClosedResourceError("hub not started")
        return self._next_seq - 1

    async def close(self) -> None:
        """Flush pending events and stop accepting new ones."""
        if self._flusher is not None:
            await asyncio.shield(self._flusher)
        self._closed = True
        if self._reader is not None:
            reader, self._reader = self._reader, None
            await asyncio.to_thread(reader.close)

    def close_streams(self) -> None:
        """End every live subscription (shutdown): their ``next`` raises ClosedResourceError."""
        for live in tuple(self._live):
            live.closed = True
            live.queue.put_nowait(None)
        self._live.clear()

    async def emit(self, session: str | None, event_type: str, body: Any) -> Event:
        """Number, save and deliver one event; returns it once saved and delivered."""
        return await asyncio.shield(self.emit_nowait(session, event_type, body))

    def emit_nowait(self, session: str | None, event_type: str, body: Any) -> asyncio.Future[Event]:
        """Queue one event without waiting for the disk; the future resolves once saved and delivered.

        Events keep the order of the calls. Streaming text uses this so a burst of
        deltas shares one commit (and one fsync) instead of paying one each; the
        caller must await the futures before it reports the stream finished.
        """
        if self._closed or self._next_seq is None:
            raise ClosedResourceError("the hub is closed; no more events can be emitted")
        if event_type not in EVENTS:
            raise InternalError(f"event type {event_type!r} is not registered")
        wire = body_to_wire(body)
        body_json = _encodable_json(event_type, wire, session)  # this caller's bad input fails this caller alone
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._pending.append((session, event_type, wire, body_json, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="exo-hub-flush")
        return future

    async def _flush(self) -> None:
        assert self._next_seq is not None
        while self._pending:
            batch, self._pending = self._pending, []
            first = self._next_seq
            rows: list[tuple[Event, str, asyncio.Future[Event]]] = []
            ts = iso_utc(self._clock.now())
            for offset, (session, etype, wire, body_json, future) in enumerate(batch):
                event = Event(
                    id=self._ids.new("evt"), seq=first + offset, session=session, type=etype, ts=ts, body=wire
                )
                rows.append((event, _event_json(event, body_json), future))
            try:
                await self._worker.run(
                    self._insert, [(e.seq, e.id, e.session, e.type, e.ts, raw) for e, raw, _ in rows]
                )
            except BaseException as exc:  # every waiter must hear of the failure
                for _, _, future in rows:
                    if not future.done():
                        future.set_exception(
                            exc if isinstance(exc, Exception) else InternalError("event write cancelled")
                        )
                if not isinstance(exc, Exception):
                    raise
                continue
            self._next_seq = first + len(rows)
            for event, raw, future in rows:
                item = StoredEvent(event.seq, event.session, raw)
                for live in tuple(self._live):
                    live.offer(item)
                if not future.done():
                    future.set_result(event)

    def _insert(self, rows: list[tuple[int, str, str | None, str, str, str]]) -> None:
        conn = self._worker.connection
        try:
            with write_transaction(conn):
                conn.executemany("INSERT INTO events(seq, id, session, type, ts, data) VALUES (?,?,?,?,?,?)", rows)
        except sqlite3.Error as exc:
            raise StorageError(f"could not save events {rows[0][0]}..{rows[-1][0]}: {exc}") from exc

    # -- reading -----------------------------------------------------------

    async def read_page(
        self, since: int, session: str | None, limit: int = _PAGE, reader: sqlite3.Connection | None = None
    ) -> list[StoredEvent]:
        """Stored events numbered above ``since`` (of ``session`` if given), oldest first.

        Pass a ``reader`` connection of your own to replay in parallel with others;
        without one, the hub's shared reader is used (one read at a time).
        """
        limit = max(1, min(limit, 10_000))
        if reader is not None:
            return await asyncio.to_thread(self._read, reader, since, session, limit)
        async with self._reader_lock:
            if self._reader is None:
                self._reader = await asyncio.to_thread(self._worker.reader)
            return await asyncio.to_thread(self._read, self._reader, since, session, limit)

    async def open_reader(self) -> sqlite3.Connection:
        """A read-only connection for one subscription's replay (caller closes it)."""
        return await asyncio.to_thread(self._worker.reader)

    @staticmethod
    def _read(conn: sqlite3.Connection, since: int, session: str | None, limit: int) -> list[StoredEvent]:
        where, args = ("", (since, limit)) if session is None else ("session = ? AND ", (session, since, limit))
        rows = conn.execute(f"SELECT seq, session, data FROM events WHERE {where}seq > ? ORDER BY seq LIMIT ?", args)
        return [StoredEvent(r[0], r[1], r[2]) for r in rows]

    def subscribe(self, since: int = 0, session: str | None = None) -> Subscription:
        """A subscription replaying events above ``since`` then following live."""
        if self._closed:
            raise ClosedResourceError("the hub is closed")
        return Subscription(self, since, session)

    def _register(self, session: str | None) -> _Live:
        live = _Live(session, self._queue_limit)
        self._live.add(live)
        return live

    def _unregister(self, live: _Live) -> None:
        self._live.discard(live)


class Subscription:
    """Replays from the database, then follows live events; no gap, no duplicate.

    Use ``await sub.next(timeout)`` (``None`` on timeout, for keep-alive
    comments) and ``sub.close()``; or ``async with hub.subscribe(...) as sub``.
    """

    def __init__(self, hub: Hub, since: int, session: str | None) -> None:
        self._hub = hub
        self._session = session
        self.last_seq = max(0, since)
        self._buffer: deque[StoredEvent] = deque()
        self._replaying = True
        self._reader: sqlite3.Connection | None = None
        # Register before the first database read: see the module docstring.
        self._live: _Live | None = hub._register(session)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop receiving live events and release the replay connection."""
        if self._live is not None:
            self._hub._unregister(self._live)
            self._live = None
        self._release_reader()

    def _release_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    async def next(self, timeout: float | None = None) -> StoredEvent | None:
        """The next event, or ``None`` when ``timeout`` passes with nothing new."""
        while True:
            if self._live is None or self._live.closed:
                raise ClosedResourceError("subscription closed: the core is shutting down")
            ready: list[StoredEvent] = []
            if self.drain_ready(ready.append, limit=1):  # what is buffered or queued already
                return ready[0]
            if self._replaying:
                # Each replaying subscription reads on its own connection, so replays
                # run in parallel; the connection is released once live.
                if self._reader is None:
                    self._reader = await self._hub.open_reader()
                page = await self._hub.read_page(self.last_seq, self._session, reader=self._reader)
                if page:
                    self._buffer = deque(page)
                else:
                    self._replaying = False
                    self._release_reader()
                continue
            if self._live.lagged:
                self._hub._unregister(self._live)
                self._live = self._hub._register(self._session)
                self._replaying = True
                continue
            try:
                item = await asyncio.wait_for(self._live.queue.get(), timeout)
            except TimeoutError:
                return None
            if item is not None and self._is_new(item):  # None: the shutdown wake-up; the check at the top raises
                return item

    def _is_new(self, item: StoredEvent) -> bool:
        """Whether ``item`` is past what was already delivered (then it counts as delivered)."""
        if item.seq <= self.last_seq:
            return False
        self.last_seq = item.seq
        return True

    def drain_ready(self, fn: Callable[[StoredEvent], None], limit: int = 256) -> int:
        """Pass events that are ready now (replayed or queued live) to ``fn``; returns how many.

        Never waits, so a transport can batch a burst into one write.
        """
        count = 0
        while self._buffer and count < limit:
            item = self._buffer.popleft()
            if self._is_new(item):
                fn(item)
                count += 1
        while self._live is not None and not self._replaying and count < limit:
            try:
                queued = self._live.queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if queued is not None and self._is_new(queued):  # None: the shutdown wake-up; next() raises
                fn(queued)
                count += 1
        return count


def _encodable_json(event_type: str, wire: dict[str, Any], session: str | None) -> str:
    """The body's canonical JSON, checked to encode as UTF-8 (and to SQLite) before it joins a batch.

    One caller's unencodable body once failed every event of its group commit,
    and another session's running turn with it.
    """
    try:
        text = canonical_json(wire)
        text.encode("utf-8")
        if session is not None:
            session.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadBodyError(
            f"event {event_type!r} cannot be stored: it holds text that is not valid Unicode (a lone surrogate)"
        ) from exc
    except ValueError as exc:
        raise BadBodyError(f"event {event_type!r} cannot be stored: it holds a number JSON cannot carry") from exc
    except TypeError as exc:
        raise InternalError(f"event {event_type!r} has a body that is not JSON: {exc}") from exc
    return text


def _event_json(event: Event, body_json: str) -> str:
    """``event.to_json()`` reusing the body's JSON text already made: ``body`` sorts first among the keys."""
    envelope = canonical_json(
        {"id": event.id, "seq": event.seq, "session": event.session, "ts": event.ts, "type": event.type}
    )
    return '{"body":' + body_json + "," + envelope[1:]
