"""What the small screen shows, as one immutable value, and how events change it.

The device client keeps a :class:`ScreenState` and replaces it on every event
and every button; the layouts (:mod:`device.layouts`) draw it. Keeping the
state a plain frozen value makes every screen reproducible: the same state
always gives the same pixels.

Which card is on top: an open approval, then an open question, then a
notice (a learned-taste row or an announcement, for a few seconds), then the
streamed answer.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from typing import Any

from exo_core.protocol import Event

__all__ = [
    "Approval",
    "Question",
    "Notice",
    "ScreenState",
    "apply_event",
    "layout_of",
    "approval_target",
    "local_clock_time",
    "ACTIVITIES",
    "PHASES",
]

ACTIVITIES = ("idle", "listening", "transcribing", "thinking", "speaking")
# What a running turn is doing, shown with its elapsed seconds (docs/device.md): waiting for the
# model's first word, a tool reading something, a tool acting, words streaming.
PHASES = ("thinking", "reading", "working", "answering")
# Tools that only read: while one runs the person sees "reading".
_READING_TOOLS = frozenset({"read_file", "search", "recall", "list_files", "search_sessions"})
# Argument names that say what an action acts on, most telling first (docs/device.md "approval card").
_TARGET_KEYS = ("path", "paths", "file", "files", "to", "recipient", "recipients", "remote", "url", "command", "query")


@dataclass(frozen=True, slots=True)
class Approval:
    """An open ``approval.requested`` shown as a card."""

    request_id: str
    summary: str
    risk: str
    tool: str = ""
    session: str | None = None
    # What the action acts on (the file, the recipient, the remote), from the call's arguments.
    target: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """An open ``question.asked`` shown as a card; ``selected`` is the highlighted option (0-based)."""

    question_id: str
    text: str
    options: tuple[str, ...] = ()
    allow_text: bool = False
    selected: int = 0
    session: str | None = None
    # When the core stops waiting, as the device's local time ("22:41"); '' when it waits for ever.
    deadline: str = ""
    # Not read aloud unless the person asks (question.asked's ``quiet``: a question about learning).
    quiet: bool = False


@dataclass(frozen=True, slots=True)
class Notice:
    """A short message: ``kind`` is taste, info, warning or error."""

    text: str
    kind: str = "info"
    title: str = ""


@dataclass(frozen=True, slots=True)
class ScreenState:
    """Everything the screen draws."""

    link: str = "connecting"
    model: str = ""
    activity: str = "idle"
    heard: str = ""
    answer: str = ""
    scroll: int = 0
    approvals: tuple[Approval, ...] = ()
    questions: tuple[Question, ...] = ()
    notice: Notice | None = None
    pending: int = 0
    turn_id: str | None = None
    # The running turn's phase (one of PHASES, '' when no turn runs) and its whole seconds so far.
    phase: str = ""
    elapsed: int = 0

    @property
    def approval(self) -> Approval | None:
        """The approval on top (oldest first)."""
        return self.approvals[0] if self.approvals else None

    @property
    def question(self) -> Question | None:
        """The question on top (the newest: a question the core asks replaces older ones on screen)."""
        return self.questions[0] if self.questions else None

    def with_(self, **changes: Any) -> ScreenState:
        """A copy with ``changes``."""
        return replace(self, **changes)


def approval_target(tool: str, arguments: Any) -> str:
    """What an approval acts on, in words: ``notes.txt``, ``ana@example.org``, ``origin main``.

    Taken from the call's arguments by name (``path``, ``to``, ``remote`` ...); a call with none of
    those shows its arguments' values. Never empty when the call has arguments: the card must say
    what will happen to what, shortened to the screen but never dropped.
    """
    if not isinstance(arguments, dict) or not arguments:
        return ""
    for key in _TARGET_KEYS:
        value = arguments.get(key)
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)
    values = [str(v) for v in arguments.values() if isinstance(v, (str, int, float)) and str(v)]
    return " ".join(values)


def local_clock_time(iso: Any) -> str:
    """``HH:MM`` in this device's time zone for an ISO-8601 UTC time; '' when absent or unreadable."""
    if not isinstance(iso, str) or not iso:
        return ""
    try:
        moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return moment.astimezone().strftime("%H:%M")


def layout_of(state: ScreenState) -> str:
    """The name of the layout that draws ``state`` (approval, question, notice, answer)."""
    if state.approval is not None:
        return "approval"
    if state.question is not None:
        return "question"
    if state.notice is not None:
        return "notice"
    return "answer"


def apply_event(state: ScreenState, event: Event, session: str | None) -> ScreenState:
    """The state after ``event``; ``session`` is the device's own conversation.

    The answer stream is taken only from the device's own session; approvals,
    questions, taste and notices are taken from every session (one person, one
    device), so a laptop's turn that needs a yes can be answered here too.
    """
    body = event.body
    kind = event.type
    mine = session is not None and event.session == session
    if kind == "message.delta" and mine:
        text = state.answer + str(body.get("text", ""))
        return state.with_(
            answer=text,
            activity="speaking" if state.activity == "speaking" else "thinking",
            turn_id=str(body.get("turn_id") or state.turn_id),
            phase="answering" if state.phase else "",
        )
    if kind == "message.completed" and mine and body.get("role") == "user":
        # The core's record of what was asked starts the answer view (queued and steered turns too).
        return state.with_(heard=str(body.get("content", "")), answer="", scroll=0)
    if kind == "turn.started" and mine:
        return state.with_(activity="thinking", turn_id=str(body.get("turn_id")), scroll=0, phase="thinking", elapsed=0)
    if kind == "tool.started" and mine and state.phase:
        tool = str(body.get("name") or body.get("tool") or "")
        return state.with_(phase="reading" if tool in _READING_TOOLS else "working")
    if kind == "tool.completed" and mine and state.phase:
        return state.with_(phase="thinking")
    if kind == "turn.completed":
        # The turn's questions closed with it (nobody waits for their answers any more).
        state = state.with_(questions=tuple(q for q in state.questions if q.session != event.session))
        if not mine:
            return state
        stop = str(body.get("stop_reason", "end"))
        activity = "speaking" if state.activity == "speaking" else "idle"
        changes: dict[str, Any] = {"activity": activity, "phase": "", "elapsed": 0}
        hint = body.get("hint")
        if hint:
            # The core's words for what happened and what to do (an empty answer, a failure, a stop).
            changes["notice"] = Notice(str(hint), "warning", f"turn {stop}")
        elif stop not in ("end", "iteration_cap"):
            error = body.get("error")
            changes["notice"] = Notice(f"turn {stop}" + (f": {error}" if error else ""), "warning")
        return state.with_(**changes)
    if kind == "usage.updated" and body.get("model"):
        return state.with_(model=str(body["model"]))
    if kind == "approval.requested":
        approval = Approval(
            str(body.get("request_id")),
            str(body.get("summary", "")),
            str(body.get("risk", "")),
            str(body.get("tool", "")),
            event.session,
            approval_target(str(body.get("tool", "")), body.get("arguments")),
        )
        if any(a.request_id == approval.request_id for a in state.approvals):
            return state
        return state.with_(approvals=state.approvals + (approval,))
    if kind == "approval.resolved":
        rid = body.get("request_id")
        return state.with_(approvals=tuple(a for a in state.approvals if a.request_id != rid))
    if kind == "question.asked":
        options = tuple(str(o) for o in body.get("options", []) or [])
        question = Question(
            str(body.get("question_id")),
            # The short wording when the core gives one: this is a small screen.
            str(body.get("short") or body.get("text", "")),
            options,
            bool(body.get("allow_text", False)),
            0,
            event.session,
            local_clock_time(body.get("expires_at")),
            bool(body.get("quiet", False)),
        )
        if any(q.question_id == question.question_id for q in state.questions):
            return state
        # The newest question goes on top: the one the core asks now is the one the person answers.
        return state.with_(questions=(question,) + state.questions)
    if kind in ("question.answered", "question.closed"):
        qid = body.get("question_id")
        return state.with_(questions=tuple(q for q in state.questions if q.question_id != qid))
    if kind == "taste.updated":
        change = str(body.get("change", "promoted"))
        title = {"promoted": "Learned", "edited": "Taste edited", "deleted": "Taste removed"}.get(change, "Taste")
        return state.with_(notice=Notice(str(body.get("text", "")), "taste", title))
    if kind == "ui.panel":
        # The core shapes a panel for this device into a card: {"form": "card", "lines": [title, summary]}.
        raw = body.get("data")
        data = raw if isinstance(raw, dict) else {}
        lines = [str(x) for x in data.get("lines", [])] if data.get("form") == "card" else []
        title = lines[0] if lines else str(body.get("title") or body.get("kind") or "Panel")
        text = " ".join(lines[1:]) or "Open it on a larger screen."
        return state.with_(notice=Notice(text, "info", title))
    if kind == "notice":
        level = str(body.get("level", "info"))
        return state.with_(
            notice=Notice(str(body.get("text", "")), level if level in ("info", "warning", "error") else "info")
        )
    return state
