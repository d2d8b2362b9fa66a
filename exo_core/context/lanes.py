"""Two job lanes with separate limits, bounded queues, pausing, and settling (docs/context.md).

* ``live`` (default 8 at once) summarizes the conversations people are having;
  ``import`` (default 2 at once) summarizes imported history. Each lane has its
  own running limit and its own bounded in-memory queue, so a year of imported
  chats never takes a live slot.
* While live work is queued or running, the import lane starts nothing new
  (``import_yields``): both lanes usually share one local model, and a turn
  waiting on its summaries matters more than an import finishing sooner.
* The database is the durable queue. A job that does not fit in a lane's
  queue stays ``pending`` there and the lane is marked *overflowed*; when its
  queue drains, the lane asks its ``refill`` callback for more.
* ``pause(lane)`` stops a lane from starting jobs (running ones finish);
  ``resume(lane)`` starts it again.
* ``wait_idle(session, timeout)`` waits until a session has no live job queued
  or running, or the injectable clock says the timeout passed.

Counters of the most jobs ever running at once are kept per lane, so a test can
check the limits were never exceeded.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from exo_core.clock import Clock

__all__ = ["Job", "Lane", "LaneSet"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """One summary job: the node ``(level, idx)`` of a session."""

    session_id: str
    level: int
    idx: int

    @property
    def key(self) -> tuple[str, int, int]:
        """The job's identity (a node address within a session)."""
        return (self.session_id, self.level, self.idx)


@dataclass(slots=True, eq=False)
class Lane:
    """A bounded queue and a running limit for one kind of work."""

    name: str
    limit: int
    queue_limit: int
    queue: deque[Job] = field(default_factory=deque)
    running: int = 0
    max_running: int = 0
    paused: bool = False
    overflowed: bool = False
    started: int = 0
    failed: int = 0

    @property
    def busy(self) -> bool:
        """Whether anything is queued or running."""
        return bool(self.queue) or self.running > 0


Runner = Callable[[Job, str], Awaitable[None]]
Refill = Callable[[str, int, set[tuple[str, int, int]]], Awaitable[list[Job]]]


class LaneSet:
    """Schedules jobs on the lanes; ``run(job, lane)`` does one job and must not raise."""

    def __init__(
        self,
        run: Runner,
        refill: Refill,
        *,
        live_limit: int,
        import_limit: int,
        live_queue_limit: int,
        import_queue_limit: int,
        import_yields: bool = True,
    ) -> None:
        self._run = run
        self._refill = refill
        self.lanes = {
            "live": Lane("live", live_limit, live_queue_limit),
            "import": Lane("import", import_limit, import_queue_limit),
        }
        self._import_yields = import_yields
        self._where: dict[tuple[str, int, int], str] = {}  # queued or running jobs: their lane
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._refilling: set[str] = set()
        self._closed = False

    # -- submitting --------------------------------------------------------

    def submit(self, job: Job, lane: str) -> bool:
        """Queue ``job`` on ``lane``; False if already known, the lane is full, or the set closed."""
        if self._closed or job.key in self._where:
            return False
        target = self.lanes[lane]
        if len(target.queue) >= target.queue_limit:
            target.overflowed = True  # it stays pending in the database; refill finds it later
            return False
        target.queue.append(job)
        self._track(job, lane)
        self._pump()
        return True

    def promote(self, session_id: str) -> int:
        """Move a session's queued import jobs to the live lane (the person is using it)."""
        source, target = self.lanes["import"], self.lanes["live"]
        # The session's oldest queued jobs, as many as the live queue has room for.
        moved = [job for job in source.queue if job.session_id == session_id][: target.queue_limit - len(target.queue)]
        source.queue = deque(job for job in source.queue if job not in moved)
        for job in moved:
            target.queue.append(job)
            self._track(job, "live")
        if moved:
            self._pump()
        return len(moved)

    # -- control -----------------------------------------------------------

    def pause(self, lane: str) -> None:
        """Start no new job on ``lane`` until :meth:`resume`."""
        self.lanes[lane].paused = True

    def resume(self, lane: str) -> None:
        """Let ``lane`` start jobs again."""
        self.lanes[lane].paused = False
        self._pump()

    def kick(self, lane: str) -> None:
        """Mark ``lane`` as having work in the database (at start, or after an import)."""
        self.lanes[lane].overflowed = True
        self._pump()

    def pending(self, session_id: str, lane: str = "live") -> int:
        """Jobs of ``session_id`` queued or running on ``lane``."""
        return sum(1 for key, where in self._where.items() if key[0] == session_id and where == lane)

    async def wait_idle(self, session_id: str, timeout: float, clock: Clock, lane: str = "live") -> bool:
        """Wait until ``session_id`` has no job on ``lane``; False when ``timeout`` passed first."""
        if self.pending(session_id, lane) == 0:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(f"{lane}:{session_id}", []).append(future)
        sleeper = asyncio.ensure_future(clock.sleep(timeout))
        try:
            await asyncio.wait({future, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiters = self._waiters.get(f"{lane}:{session_id}", [])
            if future in waiters:
                waiters.remove(future)
        return future.done() or self.pending(session_id, lane) == 0

    async def wait_all_idle(self, lane: str, poll: float = 0.01) -> None:
        """Wait until ``lane`` has nothing queued, running or left in the database (imports, tests)."""
        target = self.lanes[lane]
        while target.busy or target.overflowed or lane in self._refilling:
            await asyncio.sleep(poll)

    async def close(self) -> None:
        """Stop starting jobs and cancel running ones (they stay pending in the database)."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for key in list(self._waiters):
            self._wake(key)

    # -- running -----------------------------------------------------------

    def _track(self, job: Job, lane: str | None) -> None:
        """Record ``job`` as on ``lane`` (None: finished); wake those waiting for its session to leave a lane."""
        old = self._where.pop(job.key, None)
        if lane is not None:
            self._where[job.key] = lane
        if old is not None and old != lane and not self.pending(job.session_id, old):
            self._wake(f"{old}:{job.session_id}")

    def _wake(self, key: str) -> None:
        for future in self._waiters.pop(key, []):
            if not future.done():
                future.set_result(None)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _pump(self) -> None:
        if self._closed:
            return
        live = self.lanes["live"]
        # Judged lane by lane: the live lane, first, may just have become busy.
        for lane in self.lanes.values():
            if lane.name != "live" and self._import_yields and live.busy:
                continue  # the import lane yields to a busy live lane
            while lane.queue and lane.running < lane.limit and not lane.paused:
                job = lane.queue.popleft()
                lane.running += 1
                lane.started += 1
                lane.max_running = max(lane.max_running, lane.running)
                self._spawn(self._execute(job, lane), f"summary-{job.key}")
            if not lane.queue and lane.overflowed and not lane.paused and lane.name not in self._refilling:
                self._refilling.add(lane.name)
                self._spawn(self._do_refill(lane), f"refill-{lane.name}")

    async def _execute(self, job: Job, lane: Lane) -> None:
        try:
            await self._run(job, lane.name)
        finally:
            lane.running -= 1
            self._track(job, None)
            self._pump()

    async def _do_refill(self, lane: Lane) -> None:
        try:
            space = lane.queue_limit - len(lane.queue)
            jobs = await self._refill(lane.name, space, set(self._where))
            # Fewer than asked means the database holds no more for this lane.
            lane.overflowed = len(jobs) >= space
            for job in jobs:
                if job.key not in self._where and len(lane.queue) < lane.queue_limit:
                    lane.queue.append(job)
                    self._track(job, lane.name)
        except Exception:  # a failed refill is retried on the next kick; log it loudly
            log.exception("could not load pending %s summaries", lane.name)
            lane.overflowed = False
        finally:
            self._refilling.discard(lane.name)
        self._pump()
