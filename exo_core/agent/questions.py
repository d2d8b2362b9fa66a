"""Questions to the person: asked once, answerable by any client, first answer wins.

The core asks through :class:`QuestionBroker` (the agent uses the
``ask_person`` tool). ``question.asked`` is emitted through the hub, which
saves it in ``sessions.sqlite`` before any client sees it, so a client that
reconnects or replays sees the question and can still answer it while the
asking turn waits. The broker decides the winner on the event loop (one
thread), so two clients answering at once cannot both win: the first gets the
answer recorded and ``question.answered`` goes to everyone, the second gets a
typed ``conflict``.

Open questions live with the turn that waits for them. When one closes without
an answer (it expired, or its turn ended) ``question.closed`` goes to every
client so no screen keeps a card nobody waits for; answering it then is refused
with a typed ``conflict`` that says the question has closed, never silently
dropped. A question asked with ``quiet`` is not read aloud by a voice client
unless the person asks; ``short`` is its wording for a small screen.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from exo_core.clock import Clock, SystemClock, iso_utc
from exo_core.errors import BadBodyError, ConflictError, NotFoundError
from exo_core.events.hub import Hub
from exo_core.ids import IdFactory, RandomIds
from exo_core.protocol import commands as cmd
from exo_core.protocol.events import QuestionAnswered, QuestionAsked, QuestionClosed
from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec, object_schema

__all__ = ["Answer", "QuestionBroker", "AskPersonTool", "ASK_PERSON", "MAX_OPTIONS", "placeholder"]

MAX_OPTIONS = 9
# The tool's spec apart from a broker, so ``exo init`` can name what exod will offer (exo_core/engine/core.py).
ASK_PERSON = ToolSpec(
    name="ask_person",
    ability="ask the person questions",
    description="Ask the person a short question and wait for the answer. "
    f"Give up to {MAX_OPTIONS} short options when the answer is a choice.",
    parameters=object_schema(
        ("question",),
        question="string",
        allow_text="boolean",
        options={"type": "array", "items": {"type": "string"}},
    ),
)
_REMEMBERED = 256
# Words a small model copies from a tool's schema or examples instead of writing a question: shown to
# the person they mean nothing, and a turn would wait on them (docs/protocol.md "question.asked").
_PLACEHOLDERS = frozenset(
    {"text", "string", "question", "option", "options", "answer", "example", "...", "todo", "none", "null", "value"}
)


def placeholder(text: str) -> bool:
    """Whether ``text`` is empty or a schema word (``"text"``, ``"string"``) rather than something to ask."""
    words = " ".join(str(text).split()).strip(" .?!:\"'").lower()
    return not words or words in _PLACEHOLDERS


@dataclass(frozen=True, slots=True)
class Answer:
    """The person's answer: a 1-based ``option`` and/or free ``text``, or ``declined`` (neither)."""

    option: int | None
    text: str | None
    declined: bool = False

    def describe(self, options: tuple[str, ...]) -> str:
        """The answer as a sentence the model can read."""
        if self.declined:
            return "The person did not answer; go on without their answer."
        if self.option is not None and 1 <= self.option <= len(options):
            return f"The person chose option {self.option}: {options[self.option - 1]}"
        return f"The person answered: {self.text or ''}"


@dataclass(slots=True)
class _Open:
    session_id: str
    options: tuple[str, ...]
    allow_text: bool
    future: asyncio.Future[Answer]


class QuestionBroker:
    """Asks questions, waits for the first answer and closes them."""

    def __init__(self, hub: Hub, ids: IdFactory | None = None, *, clock: Clock | None = None) -> None:
        self._hub = hub
        self._ids = ids or RandomIds()
        self._clock = clock or SystemClock()
        self._open: dict[str, _Open] = {}
        self._closed: OrderedDict[str, str] = OrderedDict()

    async def ask(
        self,
        session_id: str,
        text: str,
        options: list[str] | tuple[str, ...] = (),
        *,
        allow_text: bool = False,
        timeout: float | None = None,
        short: str = "",
        quiet: bool = False,
    ) -> Answer:
        """Ask the person and wait for the answer.

        Raises :class:`TimeoutError` after ``timeout`` seconds without one; an
        interrupt of the waiting turn cancels the wait. Either way the question
        closes and ``question.closed`` says so to every client.
        """
        opts = tuple(" ".join(str(o).split()) for o in options)
        if placeholder(text):
            raise BadBodyError(f"a question needs real text, not {text.strip()!r}", field="question")
        if len(opts) > MAX_OPTIONS or any(placeholder(o) for o in opts):
            raise BadBodyError(f"a question takes 0 to {MAX_OPTIONS} options, each real text", field="options")
        allow_text = allow_text or not opts
        question_id = self._ids.new("q")
        why = "its turn ended"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._open[question_id] = _Open(session_id, opts, allow_text, future)
        try:
            await self._hub.emit(
                session_id,
                "question.asked",
                QuestionAsked(
                    question_id=question_id,
                    text=text.strip(),
                    options=list(opts),
                    allow_text=allow_text,
                    expires_at=iso_utc(self._clock.now() + timeout) if timeout is not None else None,
                    short=short.strip(),
                    quiet=quiet,
                ),
            )
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            why = "expired"
            raise
        finally:
            if self._open.pop(question_id, None) is not None:
                await asyncio.shield(self._closed_unanswered(session_id, question_id, why))

    async def answer(
        self, question_id: str, option: int | None = None, text: str | None = None, *, decline: bool = False
    ) -> Answer:
        """Answer (or ``decline``) an open question; a late second answer raises :class:`ConflictError`."""
        entry = self._open.get(question_id)
        if entry is None:
            if question_id in self._closed:
                raise ConflictError(f"that question has closed: {self._closed[question_id]}", field="question_id")
            raise NotFoundError(
                f"that question has closed (no open question {question_id!r}: its turn ended or the core restarted)",
                field="question_id",
            )
        if decline:
            if option is not None or (text or "").strip():
                raise BadBodyError("a declined question takes no option or text", field="decline")
            return await self._close(question_id, entry, Answer(option=None, text=None, declined=True))
        if option is None and not (text or "").strip():
            raise BadBodyError("answer with an option number or text, or decline", field="option")
        if option is not None and not 1 <= option <= len(entry.options):
            raise BadBodyError(f"option must be between 1 and {len(entry.options)}", field="option")
        if option is None and not entry.allow_text:
            raise BadBodyError("this question takes an option number, not free text", field="text")
        answer = Answer(option=option, text=(text.strip() if text else None))
        return await self._close(question_id, entry, answer)

    async def _close(self, question_id: str, entry: _Open, answer: Answer) -> Answer:
        # Decided before the first await: no second answer can slip in between.
        del self._open[question_id]
        self._remember(question_id, "it was declined" if answer.declined else "it was answered")
        if not entry.future.done():
            entry.future.set_result(answer)
        await self._hub.emit(
            entry.session_id,
            "question.answered",
            QuestionAnswered(question_id=question_id, option=answer.option, text=answer.text, declined=answer.declined),
        )
        return answer

    async def handle_answer(self, body: cmd.QuestionAnswer) -> dict[str, Any]:
        """The engine's ``question.answer`` handler."""
        answer = await self.answer(body.question_id, body.option, body.text, decline=body.decline)
        return {
            "question_id": body.question_id,
            "option": answer.option,
            "text": answer.text,
            "declined": answer.declined,
        }

    async def _closed_unanswered(self, session_id: str, question_id: str, why: str) -> None:
        self._remember(question_id, f"it {why}" if why == "expired" else why)
        await self._hub.emit(session_id, "question.closed", QuestionClosed(question_id=question_id, reason=why))

    def open_questions(self) -> list[str]:
        """Ids of questions waiting for an answer."""
        return list(self._open)

    def _remember(self, question_id: str, outcome: str) -> None:
        self._closed[question_id] = outcome
        while len(self._closed) > _REMEMBERED:
            self._closed.popitem(last=False)


class AskPersonTool:
    """The ``ask_person`` tool: the model asks the person a question with numbered options."""

    def __init__(self, broker: QuestionBroker, *, timeout: float = 600.0) -> None:
        self._broker = broker
        self._timeout = timeout
        self.spec = ASK_PERSON

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        options = arguments.get("options") or []
        if not isinstance(options, list):
            return ToolResult.error("'options' must be a list of strings")
        try:
            answer = await self._broker.ask(
                context.session_id,
                str(arguments.get("question", "")),
                options,
                allow_text=bool(arguments.get("allow_text", False)),
                timeout=self._timeout,
            )
        except BadBodyError as exc:
            # Never shown to the person: the model hears why and may ask properly or answer itself.
            return ToolResult.error(f"not asked: {exc.message}")
        except TimeoutError:
            return ToolResult.error(f"no answer within {int(self._timeout)} seconds")
        return ToolResult(answer.describe(tuple(" ".join(str(o).split()) for o in options)))
