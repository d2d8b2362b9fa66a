"""The onboarding interview inside exod: the ``store.onboard`` handler (the steps are :mod:`exo_core.store.onboard`).

Each step is asked through the core's question broker, so it reaches every client; what the person
says is written into the store folder only at the end, and recorded in the ledger.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Protocol

from exo_core.agent.questions import QuestionBroker
from exo_core.errors import BadBodyError, ConflictError, ExoError
from exo_core.events.hub import Hub
from exo_core.protocol.commands import StoreOnboard
from exo_core.protocol.events import Notice, UiPanel
from exo_core.seams.recorder import Recorder
from exo_core.sessions.facade import AsyncSessions
from exo_core.store.onboard import InterviewState, answer, apply_plan, check_fillable, confirm_text, next_question, plan
from exo_core.store.store import Store

__all__ = ["Onboarding", "InterviewCore"]

log = logging.getLogger(__name__)


class _Recording(Protocol):
    @property
    def recorder(self) -> Recorder: ...


class InterviewCore(Protocol):
    """What the interview uses of a running core (:class:`~exo_core.engine.core.Core` is one)."""

    @property
    def sessions(self) -> AsyncSessions: ...

    @property
    def hub(self) -> Hub: ...

    @property
    def questions(self) -> QuestionBroker: ...

    @property
    def options(self) -> _Recording: ...


class Onboarding:
    """The interview inside exod: the ``store.onboard`` handler, one interview at a time."""

    def __init__(self, store_root: Path, core: InterviewCore) -> None:
        self._root = store_root
        self._core = core
        self._task: asyncio.Task[None] | None = None

    async def start(self, body: StoreOnboard) -> dict[str, Any]:
        """Start the interview in ``body.session``; refused at once when it could not write."""
        if self._task is not None and not self._task.done():
            raise ConflictError("an onboarding interview is already running; answer or interrupt it first")
        await self._core.sessions.get_session(body.session)  # NotFoundError names it
        store = Store.open(self._root)
        if not body.force:
            check_fillable(store)
        self._task = asyncio.create_task(self._interview(store, body.session, body.force))
        return {"accepted": True, "session": body.session, "store": str(store.root)}

    async def _interview(self, store: Store, session: str, force: bool) -> None:
        hub, state = self._core.hub, InterviewState()
        try:
            while (question := next_question(state)) is not None:
                # The last step shows what will be written, so a misheard name is caught before it is stored.
                text = confirm_text(state) if question.step == "confirm" else question.text
                reply = await self._core.questions.ask(session, text, question.options, allow_text=question.allow_text)
                if reply.declined:
                    # Asking again would loop on a client that cannot answer; nothing is written.
                    raise ConflictError("the interview was stopped: a question was declined; run `exo onboard` again")
                try:
                    state = answer(state, reply.option, None if reply.option is not None else reply.text)
                except BadBodyError as exc:
                    await hub.emit(session, "notice", Notice(text=exc.message, level="warning"))
            onboard = plan(state)
            written = await asyncio.to_thread(apply_plan, store, onboard, force=force)
            for kind, words in onboard.said:
                await asyncio.to_thread(
                    self._core.options.recorder.record, kind, {"text": words, "source": "onboarding"}
                )
            data: dict[str, Any] = {
                "ok": True,
                "store": str(store.root),
                "written": [p.relative_to(store.root).as_posix() for p in written],
            }
        except ExoError as exc:
            log.warning("onboarding in %s stopped: %s", session, exc.message)
            data = {"ok": False, "store": str(store.root), "error": exc.message}
        await hub.emit(session, "ui.panel", UiPanel(kind="onboarding", title="Your store", data=data))

    async def aclose(self) -> None:
        """Stop a running interview (exod is shutting down); nothing is written then."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
