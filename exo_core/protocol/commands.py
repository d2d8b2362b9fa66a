"""Command bodies: one frozen, slotted dataclass per command type.

Decoding is strict (:func:`exo_core.protocol.codec.decode_command`): an unknown
type is ``unknown_command``; a missing, unknown or mistyped field is
``bad_body`` naming the field. Within protocol version 1 changes are additive:
new fields get defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from exo_core.protocol.registry import command_type

__all__ = [
    "Capabilities",
    "Hello",
    "SessionCreate",
    "SessionList",
    "SessionGet",
    "SessionFork",
    "SessionResume",
    "SessionUndo",
    "TurnSend",
    "TurnInterrupt",
    "ApprovalRespond",
    "QuestionAnswer",
    "EventsSubscribe",
    "Search",
    "ModelsSet",
    "ConfigGet",
    "ConfigSet",
    "TasteList",
    "TasteEdit",
    "StoreOnboard",
]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a client can show and take, so the core can shape what it sends.

    ``screen_columns``/``screen_rows`` are in characters; ``screen_pixels`` is
    ``[width, height]`` when the client draws; ``buttons`` names physical buttons.
    """

    screen_columns: int | None = None
    screen_rows: int | None = None
    screen_pixels: list[int] | None = None
    can_draw: bool = False
    voice_in: bool = False
    voice_out: bool = False
    buttons: list[str] = field(default_factory=list)


@command_type("hello")
class Hello:
    """Handshake: the client's protocol version, name and capabilities."""

    protocol: int
    client: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)


@command_type("session.create")
class SessionCreate:
    """Start a new session; ``workspace`` is the folder file tools work in."""

    title: str = ""
    workspace: str | None = None


@command_type("session.list")
class SessionList:
    """List sessions, newest first."""

    limit: int = 50


@command_type("session.get")
class SessionGet:
    """One session's record and (optionally) its messages."""

    session: str
    messages: bool = True


@command_type("session.fork")
class SessionFork:
    """Copy a session up to ``message_id`` (default: all) into a new session."""

    session: str
    message_id: int | None = None
    title: str = ""


@command_type("session.resume")
class SessionResume:
    """Reattach after a restart: repair a half-finished tool round, restart pending work."""

    session: str


@command_type("session.undo")
class SessionUndo:
    """Remove the last ``turns`` turns from the conversation (files on disk are not rolled back)."""

    session: str
    turns: int = 1


@command_type("turn.send")
class TurnSend:
    """Send the person's message. ``steer`` slips it in between tool rounds of
    the running turn; ``queue`` runs it after the running turn ends."""

    session: str
    text: str
    mode: Literal["send", "steer", "queue"] = "send"


@command_type("turn.interrupt")
class TurnInterrupt:
    """Stop the running turn; partial text is kept and marked interrupted."""

    session: str


@command_type("approval.respond")
class ApprovalRespond:
    """Answer an open approval request; the first answer wins."""

    request_id: str
    decision: Literal["allow", "deny", "allow_always"]
    reason: str = ""


@command_type("question.answer")
class QuestionAnswer:
    """Answer a ``question.asked``: a 1-based ``option`` number or free ``text``; or ``decline`` it
    (nobody will answer: the asking turn goes on without an answer instead of waiting it out)."""

    question_id: str
    option: int | None = None
    text: str | None = None
    decline: bool = False


@command_type("events.subscribe")
class EventsSubscribe:
    """Events numbered above ``since``. Over stdio this starts a live stream;
    over HTTP it returns one page (use ``GET /events`` for a live stream)."""

    since: int = 0
    session: str | None = None
    limit: int = 1000


@command_type("search")
class Search:
    """Full-text search over message text, tool calls and tool results. Any text is safe."""

    query: str
    limit: int = 20
    session: str | None = None


@command_type("models.set")
class ModelsSet:
    """Set the ordered ``provider:model`` routes of a role (main, aux, decision)."""

    role: str
    routes: list[str]


@command_type("config.get")
class ConfigGet:
    """Read one run-time setting, or all of them when ``key`` is omitted."""

    key: str | None = None


@command_type("config.set")
class ConfigSet:
    """Change one run-time setting."""

    key: str
    value: Any = None


@command_type("taste.list")
class TasteList:
    """Learned taste rows, optionally of one domain."""

    domain: str | None = None


@command_type("taste.edit")
class TasteEdit:
    """Edit (``text``) or delete (``delete``) one learned taste row."""

    id: str
    text: str | None = None
    delete: bool = False


@command_type("store.onboard")
class StoreOnboard:
    """Run the onboarding interview in ``session``: each step is a ``question.asked``,
    the final ``ui.panel`` (kind ``onboarding``) says what was written. ``force``
    writes even over an edited pack."""

    session: str
    force: bool = False
