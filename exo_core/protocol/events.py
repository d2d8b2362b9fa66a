"""Event bodies: one frozen, slotted dataclass per event type.

The hub emits these (converted to plain JSON objects); clients decode them
loosely (:func:`exo_core.protocol.codec.decode_event_body`), dropping fields they
do not know so an older client keeps working against a newer core.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from exo_core.protocol.registry import event_type

__all__ = [
    "MessageDelta",
    "ReasoningDelta",
    "MessageCompleted",
    "TurnStarted",
    "TurnCompleted",
    "ToolStarted",
    "ToolOutput",
    "ToolCompleted",
    "UsageUpdated",
    "ApprovalRequested",
    "ApprovalResolved",
    "QuestionAsked",
    "QuestionAnswered",
    "QuestionClosed",
    "SessionUpdated",
    "ContextCompacted",
    "DecisionQueued",
    "TasteUpdated",
    "UiPanel",
    "Notice",
]


@event_type("message.delta")
class MessageDelta:
    """A piece of the assistant's answer text."""

    turn_id: str
    text: str


@event_type("reasoning.delta")
class ReasoningDelta:
    """A piece of the model's reasoning text."""

    turn_id: str
    text: str


@event_type("message.completed")
class MessageCompleted:
    """A message was stored. ``status`` is ``complete``, ``interrupted`` or ``error``."""

    message_id: int
    role: str
    content: str
    turn_id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    status: str = "complete"


@event_type("turn.started")
class TurnStarted:
    """A turn began (``resumed`` when continuing one cut off by a restart)."""

    turn_id: str
    mode: str = "send"
    resumed: bool = False


@event_type("turn.completed")
class TurnCompleted:
    """A turn ended. ``stop_reason``: end, interrupted, error, iteration_cap, crashed."""

    turn_id: str
    stop_reason: str
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # For the person: what happened and what to do, when the answer does not say it (exo_core.agent.outcome).
    hint: str | None = None


@event_type("tool.started")
class ToolStarted:
    """A tool call began."""

    turn_id: str
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    risk: str = "low"


@event_type("tool.output")
class ToolOutput:
    """Streamed output of a running tool (``stream``: stdout or stderr)."""

    call_id: str
    text: str
    stream: str = "stdout"


@event_type("tool.completed")
class ToolCompleted:
    """A tool call ended; ``result`` is what the model sees (cut at 100,000 characters)."""

    call_id: str
    name: str
    ok: bool
    result: str
    duration_ms: int = 0
    truncated: bool = False


@event_type("usage.updated")
class UsageUpdated:
    """Token use and cost of one model call, with the session's running total.

    Of the ``input_tokens``, ``cache_read_tokens`` came from the engine's prompt
    cache (the state of a prefix it had already read) and ``evaluated_tokens``
    were read anew: the part that costs time before the first token.
    """

    turn_id: str
    input_tokens: int
    output_tokens: int
    cost: float = 0.0
    session_cost: float = 0.0
    model: str = ""
    cache_read_tokens: int = 0
    evaluated_tokens: int = 0


@event_type("approval.requested")
class ApprovalRequested:
    """The agent wants to do something consequential; any client may answer."""

    request_id: str
    summary: str
    risk: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    turn_id: str | None = None
    call_id: str | None = None
    # Why it is asked ("it removes 1 line you did not mention from todo.txt: 'buy milk'").
    reason: str = ""
    # For a file change: a unified diff of what it would do (at most 4000 characters, cut on a line).
    diff: str = ""


@event_type("approval.resolved")
class ApprovalResolved:
    """An approval request was answered (or expired); the first answer won."""

    request_id: str
    decision: str
    reason: str = ""


@event_type("question.asked")
class QuestionAsked:
    """The core asks the person something, with numbered options."""

    question_id: str
    text: str
    options: list[str] = field(default_factory=list)
    allow_text: bool = False
    # When the asking turn stops waiting (ISO-8601 UTC); clients show it, None when it waits for ever.
    expires_at: str | None = None
    # The question in a few words for a small screen ('' : show ``text``).
    short: str = ""
    # Not read aloud by a voice client unless the person asks (a question about learning, not the task).
    quiet: bool = False


@event_type("question.answered")
class QuestionAnswered:
    """A question was answered (or declined); the first answer won."""

    question_id: str
    option: int | None = None
    text: str | None = None
    declined: bool = False


@event_type("question.closed")
class QuestionClosed:
    """A question closed without an answer here: it expired, its turn ended, or a newer question replaced it.

    Every client removes its card; an answer sent after this gets a typed ``conflict`` naming why.
    """

    question_id: str
    reason: str = "expired"


@event_type("session.updated")
class SessionUpdated:
    """A session's record changed (created, titled, forked, undone, resumed)."""

    session_id: str
    title: str = ""
    message_count: int = 0
    reason: str = ""


@event_type("context.compacted")
class ContextCompacted:
    """Older history was summarized; token estimates before and after."""

    tokens_before: int
    tokens_after: int


@event_type("decision.queued")
class DecisionQueued:
    """A decision or proposal waits for a larger model."""

    decision_id: str
    kind: str


@event_type("taste.updated")
class TasteUpdated:
    """A learned taste row was promoted, edited or deleted."""

    id: str
    text: str = ""
    weight: float = 0.0
    change: str = "promoted"


@event_type("ui.panel")
class UiPanel:
    """A panel the model opened (diff, approval, taste, session tree, file preview)."""

    kind: str
    title: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@event_type("notice")
class Notice:
    """Something the person should know (``level``: info, warning, error)."""

    text: str
    level: str = "info"
