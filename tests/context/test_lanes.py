"""Lanes: separate limits, bounded queues with refill, pause/resume, settling with a manual clock."""

from __future__ import annotations

import asyncio

from ctxutil import ManualClock

from exo_core.context.lanes import Job, LaneSet


class Work:
    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.running = {"live": 0, "import": 0}
        self.peak = {"live": 0, "import": 0}
        self.done: list[tuple[str, int, int]] = []
        self.backlog: list[Job] = []

    async def run(self, job: Job, lane: str) -> None:
        self.running[lane] += 1
        self.peak[lane] = max(self.peak[lane], self.running[lane])
        try:
            await self.gate.wait()
            self.done.append(job.key)
        finally:
            self.running[lane] -= 1

    async def refill(self, lane: str, space: int, known: set) -> list[Job]:
        out = [j for j in self.backlog if j.key not in known][:space]
        self.backlog = [j for j in self.backlog if j not in out]
        return out


def lanes(work: Work, **kw: object) -> LaneSet:
    opts = dict(live_limit=8, import_limit=2, live_queue_limit=100, import_queue_limit=5, import_yields=False)
    opts.update(kw)
    return LaneSet(work.run, work.refill, **opts)  # type: ignore[arg-type]


async def settle_tasks() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_each_lane_keeps_its_own_limit() -> None:
    work = Work()
    ls = lanes(work)
    for i in range(20):
        ls.submit(Job("live", 0, i), "live")
        ls.submit(Job("imp", 0, i), "import")
    await settle_tasks()
    assert work.running == {"live": 8, "import": 2}
    work.gate.set()
    await ls.wait_all_idle("live")
    await ls.wait_all_idle("import")
    assert work.peak == {"live": 8, "import": 2}
    assert ls.lanes["live"].max_running == 8 and ls.lanes["import"].max_running == 2
    # 2 import jobs start at once and 5 more fit the queue; the rest stays in the database
    assert len(work.done) == 20 + 2 + 5
    assert ls.lanes["import"].overflowed is False


async def test_a_full_queue_overflows_to_the_database_and_refills() -> None:
    work = Work()
    work.gate.set()
    ls = lanes(work)
    work.backlog = [Job("imp", 0, i) for i in range(40)]
    ls.kick("import")
    await ls.wait_all_idle("import")
    assert sorted(k[2] for k in work.done) == list(range(40))
    assert ls.lanes["import"].max_running <= 2


async def test_duplicates_are_refused() -> None:
    work = Work()
    ls = lanes(work)
    assert ls.submit(Job("s", 0, 1), "live")
    assert not ls.submit(Job("s", 0, 1), "live")
    assert not ls.submit(Job("s", 0, 1), "import")
    work.gate.set()
    await ls.wait_all_idle("live")


async def test_pause_and_resume_the_import_lane() -> None:
    work = Work()
    work.gate.set()
    ls = lanes(work)
    ls.pause("import")
    for i in range(4):
        ls.submit(Job("imp", 0, i), "import")
        ls.submit(Job("live", 0, i), "live")
    await ls.wait_all_idle("live")
    await settle_tasks()
    assert [k for k in work.done if k[0] == "imp"] == []
    ls.resume("import")
    await ls.wait_all_idle("import")
    assert len([k for k in work.done if k[0] == "imp"]) == 4


async def test_import_yields_while_live_work_is_pending() -> None:
    work = Work()
    ls = lanes(work, import_yields=True)
    ls.submit(Job("live", 0, 0), "live")
    ls.submit(Job("imp", 0, 0), "import")
    await settle_tasks()
    assert work.running == {"live": 1, "import": 0}
    work.gate.set()
    await ls.wait_all_idle("live")
    await ls.wait_all_idle("import")
    assert work.done == [("live", 0, 0), ("imp", 0, 0)]


async def test_promote_moves_a_sessions_import_jobs_to_live() -> None:
    work = Work()
    ls = lanes(work, import_limit=1)
    for i in range(3):
        ls.submit(Job("imp", 0, i), "import")
    await settle_tasks()
    assert ls.pending("imp", "import") == 3 and ls.pending("imp", "live") == 0
    assert ls.promote("imp") == 2
    assert ls.pending("imp", "live") == 2
    work.gate.set()
    await ls.wait_all_idle("live")
    await ls.wait_all_idle("import")


async def test_wait_idle_returns_when_done_or_when_the_clock_says_so() -> None:
    work = Work()
    ls = lanes(work)
    clock = ManualClock()
    assert await ls.wait_idle("s", 60, clock)
    ls.submit(Job("s", 0, 0), "live")
    waiter = asyncio.create_task(ls.wait_idle("s", 60, clock))
    await settle_tasks()
    clock.advance(59)
    await settle_tasks()
    assert not waiter.done()
    clock.advance(1)
    assert await waiter is False  # timed out: the caller proceeds verbatim
    waiter = asyncio.create_task(ls.wait_idle("s", 60, clock))
    await settle_tasks()
    work.gate.set()
    assert await waiter is True
    await ls.close()
