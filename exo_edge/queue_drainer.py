"""exod's own drainer of the proposal queue: queued jobs go to the larger model whenever it answers.

The learner and the decisions queue work a small device cannot do well (``exo_edge.proposal_queue``:
``reflect``, ``judge``, and ``decide``, where a queued signal decision becomes its verdict or rule
when drained); ``[learning] route`` names the larger model (the laptop's engine, docs/models.md §3).
:class:`QueueDrainer` runs inside exod as a core service (``CoreOptions.services``):
it wakes every ``drain_every`` seconds and whenever the reviewer says it queued
something (``decision.queued``), and drains when there are jobs and the route is
not resting.

Probe and cooldown are the router's own (docs/models.md §2): the drainer keeps one
:class:`~exo_core.models.router.ModelRouter` whose every role is the learning
route and nothing after it, so a job never goes to the device's local model (a
job's request names a role, ``aux`` or ``decision``, whose configured routes would
otherwise be tried first). A queued decision is recorded under the route's name
(``<route>:chat``, as exod's live larger model on that route). A
failed call sets the route's cooldown; while it rests the drainer asks nothing;
when it reopens the next job is the probe.

Exactly once is :func:`~exo_edge.proposal_queue.drain`'s: a result is appended to
the ledger under ``queue:<key>`` before its job is marked done, and only whole
answers are appended. A server killed mid-answer leaves the job queued with
nothing written, and it drains once when the server is back.

The drainer runs in its own thread with its own event loop, queue connection and
ledger connection (the ledger takes appends from several connections, as
``exo learn drain`` from another process does), so no SQLite call or model
request blocks exod's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from exo_core.errors import ClosedResourceError, ConfigError, ExoError
from exo_core.learning.service import LearningSettings
from exo_core.ledger.ledger import Ledger
from exo_core.models.catalog import ROLES
from exo_core.models.router import ModelRouter, build_router
from exo_core.seams.home import ExoHome
from exo_edge.proposal_queue import DrainReport, ProposalQueue, drain

__all__ = ["QueueDrainer", "drainer_service", "learning_router"]

log = logging.getLogger(__name__)


class QueueDrainer:
    """Drains ``queue_path`` to ``router``'s ``main`` role, appending results through ``open_ledger()``.

    ``hub`` is the core's event hub (its ``decision.queued`` events wake the drainer early).
    """

    def __init__(
        self,
        hub: Any,
        *,
        queue_path: Path,
        open_ledger: Callable[[], Ledger],
        make_router: Callable[[], ModelRouter],
        settings: LearningSettings,
    ) -> None:
        self.hub = hub
        self.queue_path = queue_path
        self.open_ledger = open_ledger
        self.make_router = make_router
        self.settings = settings
        self.reports: list[DrainReport] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._current: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        """Start the drainer thread and follow the hub for queued work."""
        self._thread = threading.Thread(target=self._main, name="exo-queue-drainer", daemon=True)
        self._thread.start()
        self._watch = asyncio.create_task(self._follow(), name="queue-drainer-watch")

    async def _follow(self) -> None:
        try:
            async with self.hub.subscribe(since=self.hub.last_seq) as sub:
                while True:
                    item = await sub.next()
                    if item is None:
                        continue
                    if json.loads(item.data).get("type") == "decision.queued":
                        self._wake.set()
        except ClosedResourceError:
            return

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._run())
        finally:
            loop.close()

    async def _run(self) -> None:
        queue = ProposalQueue(self.queue_path)
        ledger = self.open_ledger()
        router = self.make_router()
        try:
            while not self._stop.is_set():
                wait = await self._step(queue, ledger, router)
                # A plain threading wait: this loop has nothing else to run while it sleeps.
                self._wake.wait(wait)
                self._wake.clear()
        finally:
            await router.aclose()
            ledger.close()
            queue.close()

    async def _step(self, queue: ProposalQueue, ledger: Ledger, router: ModelRouter) -> float:
        """One drain when there is work and the route is open; the seconds to wait before the next."""
        every = self.settings.drain_every
        if not queue.pending(1):
            return every
        resting = _resting(router)
        if resting > 0:
            return min(every, resting + 0.1)
        self._current = asyncio.current_task()
        try:
            report = await drain(
                queue,
                router,
                ledger,
                batch=self.settings.batch,
                ceiling=self.settings.ceiling,
                route=self.settings.route,
            )
        except ExoError:
            log.exception("draining the proposal queue failed; the jobs stay queued")
            return every
        except asyncio.CancelledError:
            return 0.0  # exod is stopping: the job in flight wrote nothing and stays queued
        finally:
            self._current = None
        self.reports.append(report)
        if report.done or report.already:
            log.info("proposal queue: %d jobs answered by the larger model (%s)", report.done, report.stopped)
        if report.stopped == "batch":
            return 0.0
        if report.stopped.startswith("route unavailable"):
            log.info("proposal queue: %s; jobs stay queued", report.stopped)
            return min(every, _resting(router) + 0.1)
        return every

    async def aclose(self) -> None:
        """Stop: a job in flight is abandoned (it stays queued), the thread ends and closes its files."""
        self._stop.set()
        self._wake.set()
        loop, current = self._loop, self._current
        if loop is not None and current is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed in between: nothing to cancel
                loop.call_soon_threadsafe(current.cancel)
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 60.0)


def _resting(router: ModelRouter) -> float:
    """Seconds until a credential of the ``main`` route reopens (0: one can be tried now)."""
    waits = []
    for route in router.chain("main"):
        for cred in router.catalog.credentials(route.provider, router.env):
            left = router.cooldowns.remaining(cred.id)
            if left <= 0:
                return 0.0
            waits.append(left)
    if not waits:
        return 0.0  # no credential at all: the drain says why, and is asked again after drain_every
    return min(waits)


def learning_router(home: ExoHome, route: str) -> ModelRouter:
    """A router whose every role is ``route`` and nothing after it: a drained job never goes to another model
    (a ``decide`` job asks the ``decision`` role, a reflection ``aux``; their configured routes, or the
    ``main`` role's local model after them, would otherwise answer in the larger model's name)."""
    router = build_router(home, background=True)
    for role in ROLES:
        router.set_role(role, [route])
    return router


def drainer_service(home: ExoHome, store: Path, settings: LearningSettings) -> Callable[[Any], QueueDrainer]:
    """The core service factory exod's composition root adds when ``[learning] route`` is set."""
    from exo_core.ledger import HomeWitness, load_signing_key

    route = settings.route
    if route is None:
        raise ConfigError("the proposal queue drainer needs a route: set [learning] route in config.toml")

    def open_ledger() -> Ledger:
        return Ledger.open_store(store, signer=load_signing_key(home.keys_dir), witness=HomeWitness(home.root))

    def make_router() -> ModelRouter:
        return learning_router(home, route)

    def make(core: Any) -> QueueDrainer:
        return QueueDrainer(
            core.hub,
            queue_path=home.root / "learning" / "queue.sqlite",
            open_ledger=open_ledger,
            make_router=make_router,
            settings=settings,
        )

    return make
