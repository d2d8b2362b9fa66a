"""The reviewer inside exod: after a turn completes, review; a new live turn cancels it.

:class:`ReviewService` follows the hub's live events. On ``turn.completed``
it starts one review in a worker thread (unless one is running); the review
itself skips when there is nothing to learn. On ``turn.started`` it cancels
a running review, which stops between entries and writes nothing, so the
next turn's review sees the same entries again. What the review produced
(``taste.updated``, ``question.asked``, ``decision.queued``) is emitted as
core-wide events; a question goes through the core's question broker, so any
client (the device's buttons, the laptop) can answer it, and the answer is
appended as the person's ``utterance`` (``answer_to`` the question proposal)
and reviewed at once. ``taste.list``/``taste.edit`` are served by
:class:`exo_core.web.TasteRows` over the taste nodes; its edit (a ``rule``
aimed at the node) and delete (a ``rejection`` of it) are read by the next
review like any other signal, and :meth:`Learner.rows` gives the learned rows
with their real weights and evidence ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from exo_core.errors import ClosedResourceError, ConfigError, ExoError
from exo_core.learning.learner import Learner, ReviewReport
from exo_core.protocol import events as ev

__all__ = ["ReviewService", "LearningSettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LearningSettings:
    """``[learning]`` of config.toml: the larger model's route, the monthly ceiling, the batch size.

    With no ``route`` nothing is queued: every stage runs rules-only. With one, exod drains the
    queue to it (``exo_edge.queue_drainer``), looking every ``drain_every`` seconds.
    """

    route: str | None = None
    ceiling: float = 1.0
    batch: int = 8
    drain_every: float = 60.0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningSettings:
        """Read and check the ``[learning]`` table."""
        raw = config.get("learning", {})
        if not isinstance(raw, dict):
            raise ConfigError("[learning] must be a table")
        route, ceiling, batch = raw.get("route"), raw.get("ceiling", 1.0), raw.get("batch", 8)
        every = raw.get("drain_every", 60.0)
        if route is not None and (not isinstance(route, str) or ":" not in route):
            raise ConfigError("[learning] route must be 'provider:model', e.g. \"laptop:qwen2.5-7b\"")
        if not isinstance(ceiling, (int, float)) or isinstance(ceiling, bool) or ceiling < 0:
            raise ConfigError("[learning] ceiling must be a non-negative number (dollars a month)")
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ConfigError("[learning] batch must be a positive integer")
        if not isinstance(every, (int, float)) or isinstance(every, bool) or not 0.1 <= every <= 86_400:
            raise ConfigError("[learning] drain_every must be a number of seconds from 0.1 to 86400")
        return cls(route, float(ceiling), batch, float(every))


class ReviewService:
    """Runs the learner after turns in a running core (``hub``: the core's event hub)."""

    def __init__(self, hub: Any, learner: Learner, questions: Any = None) -> None:
        self.hub = hub
        self.learner = learner
        self.questions = questions
        self._task: asyncio.Task[None] | None = None
        self._review: asyncio.Task[None] | None = None
        self._asking: set[asyncio.Task[None]] = set()
        self._cancel = threading.Event()

    async def start(self) -> None:
        """Begin following events."""
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
                    elif kind == "turn.completed":
                        self._start_review()
        except ClosedResourceError:
            return

    def _start_review(self) -> None:
        if not self._running():
            self._cancel = threading.Event()
            self._review = asyncio.create_task(self._run(self._cancel), name="learning-review")

    def _running(self) -> bool:
        return self._review is not None and not self._review.done()

    async def _run(self, cancel: threading.Event) -> None:
        try:
            report: ReviewReport = await asyncio.to_thread(self.learner.review, cancel=cancel)
        except ExoError:
            log.exception("the learning review failed; the next turn will try again")
            return
        for kind, body in report.events:
            if kind == "question.asked" and self.questions is not None:
                task = asyncio.create_task(self._ask(body), name=f"learning-question-{body.question_id[:12]}")
                self._asking.add(task)
                task.add_done_callback(self._asking.discard)
            else:
                await self.hub.emit(None, kind, body)
        if report.queued:
            await self.hub.emit(None, "decision.queued", ev.DecisionQueued(decision_id="learning", kind="reflect"))

    async def _ask(self, asked: ev.QuestionAsked) -> None:
        """Ask through the core's question broker (any client answers, first wins); the answer is
        the person's own words in the ledger, and a review follows at once."""
        answer = await self.questions.ask(None, asked.text, asked.options)
        if answer.declined:
            return  # no words of the person's to record; the review waits for the next signal
        label = asked.options[answer.option - 1] if answer.option else (answer.text or "")
        await asyncio.to_thread(
            self.learner.ledger.append,
            "utterance",
            {"text": label, "answer_to": asked.question_id, "option": answer.option},
            refs=(asked.question_id,),
        )
        self._start_review()

    async def aclose(self) -> None:
        """Stop following events, open learning questions and a running review."""
        self._cancel.set()
        for task in (self._task, self._review, *self._asking):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
