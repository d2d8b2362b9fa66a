"""The line client: a prompt and a transcript over the protocol.

Renders streamed text, tool calls and their output, asks approvals and questions inline, and
— because it reads events through :class:`ExoClient` — resumes after a dropped
connection from the last seq it saw. Input lines are turns; lines starting
with ``/`` are commands (``/help`` lists them).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from exo_core.client.client import ExoClient
from exo_core.client.slash import SESSION_COMMANDS, help_text, session_command
from exo_core.client.turn_end import turn_end_lines
from exo_core.errors import ExoError
from exo_core.protocol import Event

__all__ = ["LineChat", "stdin_lines"]


def stdin_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None], stream: TextIO) -> None:
    """Feed lines of ``stream`` into ``queue`` from a thread (``None`` at end of input)."""

    def pump() -> None:
        for line in stream:
            loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="exo-stdin", daemon=True).start()


class LineChat:
    """One chat session driven by lines of input."""

    def __init__(
        self,
        client: ExoClient,
        *,
        out: TextIO | None = None,
        approve: str = "ask",
        answer_questions: bool = True,
        interactive: bool = True,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.client = client
        self.out = out or sys.stdout
        self.approve = approve
        # Whether the person answers ``question.asked`` from the input lines; otherwise (piped input, where
        # the next line is the next message) each question is declined so the turn goes on at once.
        self.answer_questions = answer_questions
        self.interactive = interactive
        self.session: str | None = None
        self._on_event = on_event
        self._done: dict[str, asyncio.Event] = {}
        self._pending_approvals: list[dict[str, Any]] = []
        self._pending_questions: list[dict[str, Any]] = []
        self._input_ended = False  # the end of input was read while answering: no more lines come
        self._wake = asyncio.Event()  # set when an approval or a question arrives or a turn ends
        self._in_text = False

    def _print(self, text: str = "", *, end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    async def start(self, session: str | None = None, title: str = "") -> str:
        """Handshake and open (or create) the session; returns its id."""
        self.session = await self.client.open_session(session, title)
        return self.session

    async def follow(self) -> None:
        """Render events of the session until cancelled (reconnecting as needed)."""
        async for event in self.client.events(session=self.session):
            self.render(event)
            if self._on_event:
                self._on_event(event)

    def render(self, event: Event) -> None:
        """Print one event."""
        body = event.body
        kind = event.type
        if kind == "message.delta":
            self._print(str(body.get("text", "")), end="")
            self._in_text = True
            return
        if self._in_text and kind not in ("reasoning.delta", "usage.updated"):
            self._print()
            self._in_text = False
        if kind == "tool.started":
            self._print(f"  ⚙ {body.get('name')} {_short(body.get('arguments', {}))}")
        elif kind == "tool.output":
            for line in str(body.get("text", "")).splitlines():
                self._print(f"  │ {line}")
        elif kind == "tool.completed":
            self._print(f"  {'✓' if body.get('ok') else '✗'} {body.get('name')} ({body.get('duration_ms', 0)} ms)")
        elif kind == "approval.requested":
            self._pending_approvals.append(body)
            self._wake.set()
            if body.get("reason"):
                self._print(f"  ! {body['reason']}")
            for line in str(body.get("diff") or "").splitlines():
                self._print(f"  │ {line}")
            self._print(f"  ? approve [{body.get('risk')}] {body.get('summary')}  — y(es) / n(o) / a(lways)")
        elif kind == "approval.resolved":
            self._print(f"  approval {body.get('decision')}")
            self._pending_approvals = [
                a for a in self._pending_approvals if a.get("request_id") != body.get("request_id")
            ]
        elif kind == "question.asked":
            options = body.get("options", [])
            self._print(f"  ? {body.get('text')}")
            for n, option in enumerate(options, 1):
                self._print(f"    {n}. {option}")
            if body.get("expires_at"):
                self._print(f"    (waits until {body['expires_at']})")
            self._pending_questions.append(body)
            self._wake.set()
        elif kind in ("question.answered", "question.closed"):
            if kind == "question.closed" and any(
                q.get("question_id") == body.get("question_id") for q in self._pending_questions
            ):
                self._print(f"  (that question has closed: {body.get('reason') or 'expired'})")
            self._pending_questions = [
                q for q in self._pending_questions if q.get("question_id") != body.get("question_id")
            ]
        elif kind == "turn.completed":
            stop, hint = turn_end_lines(body)
            if stop:
                self._print(f"  {stop}")
            if hint:
                self._print(f"  ! {hint}")
            done = self._done.get(str(body.get("turn_id")))
            if done is not None:
                done.set()
                self._wake.set()
        elif kind == "notice":
            self._print(f"  ! {body.get('text')}")

    async def send(self, text: str, mode: str = "send") -> str | None:
        """Send a turn and return its id (``None`` when it was steered into the running one)."""
        result = await self.client.request("turn.send", {"session": self.session, "text": text, "mode": mode})
        turn_id = result.get("turn_id")
        if result.get("disposition") in ("started", "queued") and turn_id:
            self._done.setdefault(str(turn_id), asyncio.Event())
            return str(turn_id)
        return None

    async def wait_turn(self, turn_id: str, lines: asyncio.Queue[str | None]) -> None:
        """Wait for a turn to end, answering approvals from input (or by policy) meanwhile."""
        done = self._done.setdefault(turn_id, asyncio.Event())
        while not done.is_set():
            if self._pending_approvals:
                await self._answer_approval(self._pending_approvals[0], lines)
                continue
            if self._pending_questions:
                await self._answer_question(self._pending_questions.pop(0), lines)
                continue
            self._wake.clear()
            await self._wake.wait()

    async def _answer_approval(self, request: dict[str, Any], lines: asyncio.Queue[str | None]) -> None:
        decision = self.approve
        if decision == "ask":
            answer = await lines.get()
            decision = {"y": "allow", "yes": "allow", "a": "allow_always", "always": "allow_always"}.get(
                (answer or "").strip().lower(), "deny"
            )
        self._pending_approvals = [a for a in self._pending_approvals if a is not request]
        try:
            await self.client.request("approval.respond", {"request_id": request["request_id"], "decision": decision})
        except ExoError as exc:
            self._print(f"  (approval not sent: {exc.message})")

    async def _answer_question(self, question: dict[str, Any], lines: asyncio.Queue[str | None]) -> None:
        """Answer from the next input line: a number picks an option, other text is the answer when the
        question takes text, an empty line or the end of input declines it."""
        options = question.get("options") or []
        body: dict[str, Any] = {"question_id": question["question_id"], "decline": True}
        while self.answer_questions and not self._input_ended:
            line = await lines.get()
            if line is None:
                self._input_ended = True
                break
            reply = line.strip()
            if not reply:
                break
            if reply.isdigit() and 1 <= int(reply) <= len(options):
                body = {"question_id": question["question_id"], "option": int(reply)}
                break
            if question.get("allow_text"):
                body = {"question_id": question["question_id"], "text": reply}
                break
            self._print(f"  answer with a number from 1 to {len(options)}, or an empty line to decline")
        if body.get("decline"):
            self._print("  (question declined: no answer given)")
        try:
            await self.client.request("question.answer", body)
        except ExoError as exc:
            # Answered elsewhere first, or its turn ended: the other client's answer stands.
            self._print(f"  (answer not sent: {exc.message})")

    async def command(self, line: str) -> bool:
        """Run a ``/`` command; returns ``False`` for ``/quit``."""
        name, _, rest = line[1:].partition(" ")
        if name in ("quit", "exit", "q"):
            return False
        try:
            if name == "help":
                self._print(help_text(SESSION_COMMANDS))
            else:
                assert self.session is not None, "start() opens the session first"
                text, self.session = await session_command(self.client, self.session, name, rest.strip(), title="")
                if text:
                    self._print(text)
        except ExoError as exc:
            self._print(f"error [{exc.code}]: {exc.message}")
        return True

    async def run(self, lines: asyncio.Queue[str | None]) -> None:
        """Read lines until end of input or ``/quit``."""
        follower = asyncio.create_task(self.follow())
        try:
            while True:
                if self._input_ended:
                    break
                if self.interactive:
                    self._print("> ", end="")
                line = await lines.get()
                if line is None:
                    break
                if not line.strip():
                    continue
                if line.startswith("/"):
                    before = self.session
                    if not await self.command(line.strip()):
                        break
                    if self.session != before:  # /fork, /new, /switch: follow the session now in use
                        follower.cancel()
                        follower = asyncio.create_task(self.follow())
                    continue
                if not self.interactive:
                    self._print(f"> {line}")
                try:
                    turn_id = await self.send(line)
                except ExoError as exc:
                    self._print(f"error [{exc.code}]: {exc.message}")
                    continue
                if turn_id:
                    await self.wait_turn(turn_id, lines)
        finally:
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)


def _short(arguments: dict[str, Any]) -> str:
    text = " ".join(f"{k}={v!r}" for k, v in arguments.items() if k != "content")
    return text if len(text) <= 100 else text[:97] + "..."
