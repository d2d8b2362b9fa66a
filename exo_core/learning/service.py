"""The reviewer inside exod: after a turn completes, review; a new live turn cancels it.

:class:`ReviewService` follows the hub's live events. On ``turn.completed``
it starts one review in a worker thread (unless one is running); the review
itself skips when there is nothing to learn. On ``turn.started`` it cancels
a running review, which stops between entries and writes nothing, so the
next turn's review sees the same entries again. What the review produced
(``taste.updated``, ``question.asked``, ``decision.queued``) is emitted as
core-wide events. With the engine it also serves ``taste.list`` (learned rows
with real weights and evidence ids) and ``taste.edit`` (the person's words
become a ``rule`` aimed at the lesson; ``delete`` appends a rejection).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from typing import Any

from exo_core.errors import BadBodyError, ClosedResourceError, ExoError, NotFoundError
from exo_core.learning.learner import Learner, ReviewReport
from exo_core.protocol import commands as cmd
from exo_core.protocol import events as ev

__all__ = ["ReviewService"]

log = logging.getLogger(__name__)


class ReviewService:
    """Runs the learner after turns in a running core (``hub``: the core's event hub)."""

    def __init__(self, hub: Any, learner: Learner, engine: Any = None) -> None:
        self.hub = hub
        self.learner = learner
        self.engine = engine
        self.reviews = 0
        self._task: asyncio.Task[None] | None = None
        self._review: asyncio.Task[None] | None = None
        self._cancel = threading.Event()

    async def start(self) -> None:
        """Begin following events; serve ``taste.list`` and ``taste.edit`` when given the engine."""
        if self.engine is not None:
            self.engine.add_handler("taste.list", self.taste_list)
            self.engine.add_handler("taste.edit", self.taste_edit)
        self._task = asyncio.create_task(self._watch(), name="learning-reviewer")

    async def _watch(self) -> None:
        try:
            async with self.hub.subscribe(since=self.hub.last_seq) as sub:
                while True:
                    item = await sub.next()
                    if item is None:
                        continue
                    kind = json.loads(item.data).get("type")
                    if kind == "turn.started" and self._running():
                        self._cancel.set()
                    elif kind == "turn.completed" and not self._running():
                        self._cancel = threading.Event()
                        self._review = asyncio.create_task(self._run(self._cancel), name="learning-review")
        except ClosedResourceError:
            return

    def _running(self) -> bool:
        return self._review is not None and not self._review.done()

    async def _run(self, cancel: threading.Event) -> None:
        try:
            report: ReviewReport = await asyncio.to_thread(self.learner.review, cancel=cancel)
        except ExoError:
            log.exception("the learning review failed; the next turn will try again")
            return
        if report.reason and not report.cancelled:
            self.reviews += 1
        for kind, body in report.events:
            await self.hub.emit(None, kind, body)
        if report.queued:
            await self.hub.emit(None, "decision.queued", ev.DecisionQueued(decision_id="learning", kind="reflect"))

    async def taste_list(self, body: cmd.TasteList) -> dict[str, Any]:
        """Learned taste rows (enforced, then hints) with their weights and evidence."""
        return {"domain": body.domain, "rows": await asyncio.to_thread(self.learner.rows, body.domain)}

    async def taste_edit(self, body: cmd.TasteEdit) -> dict[str, Any]:
        """Rewrite a lesson in the person's words, or delete it (a rejection: it leaves the pack)."""
        learner = self.learner
        if body.delete:
            target = await asyncio.to_thread(learner.find, body.id)
            if target is None:
                raise NotFoundError(f"no learned lesson {body.id!r}; see taste.list")
            await asyncio.to_thread(learner.reject, target, "deleted by the person")
        elif not (body.text or "").strip():
            raise BadBodyError("give the new 'text', or 'delete': true", field="text")
        else:
            target = await asyncio.to_thread(learner.edit, body.id, body.text or "")
        lesson = learner.book.lessons[target]
        change = "deleted" if body.delete else "edited"
        weight = lesson.weight(learner.book.last_ts)
        await self.hub.emit(None, "taste.updated", ev.TasteUpdated(id=lesson.node or target, text=lesson.claim,
                                                                   weight=weight, change=change))
        return {"id": lesson.node or target, "text": lesson.claim, "weight": weight, "change": change}

    async def aclose(self) -> None:
        """Stop following events and wait for a running review to stop."""
        self._cancel.set()
        for task in (self._task, self._review):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
