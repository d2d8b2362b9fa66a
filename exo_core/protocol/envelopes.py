"""The three protocol envelopes, defined once.

* :class:`Command` ``{id, type, body}``: a client asks for something.
* :class:`Response` ``{id, ok, result, error}``: the direct answer to one command.
* :class:`Event` ``{id, seq, session, type, ts, body}``: something that happened;
  ``seq`` is its number in the one stream the hub keeps.

Wire names: commands are imperative (``turn.send``), events past tense
(``turn.completed``). Bodies are JSON objects whose shapes are the dataclasses in
:mod:`exo_core.protocol.commands` and :mod:`exo_core.protocol.events`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from exo_core.protocol.canonical import canonical_json

__all__ = ["PROTOCOL_VERSION", "Command", "Response", "Event", "ErrorInfo", "shallow_dict"]

PROTOCOL_VERSION = 1


def shallow_dict(record: Any) -> dict[str, Any]:
    """A dataclass instance's fields as a mapping, values as they are (``asdict`` would copy them deeply)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The ``error`` of a failed response. ``field`` names the offending input."""

    code: str
    message: str
    field: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {name: value for name, value in shallow_dict(self).items() if value is not None}


class _Envelope:
    """What the three envelopes share: their canonical JSON text."""

    __slots__ = ()

    def to_wire(self) -> dict[str, Any]:
        return shallow_dict(self)

    def to_json(self) -> str:
        return canonical_json(self.to_wire())


@dataclass(frozen=True, slots=True)
class Command(_Envelope):
    """A request from a client. ``id`` is chosen by the client and echoed in the response."""

    id: str
    type: str
    body: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response(_Envelope):
    """The answer to one command: ``ok`` with a ``result``, or not ok with an ``error``."""

    id: str | None
    ok: bool
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None

    @classmethod
    def success(cls, command_id: str | None, result: dict[str, Any] | None = None) -> Response:
        return cls(id=command_id, ok=True, result=result or {})

    @classmethod
    def failure(cls, command_id: str | None, error: ErrorInfo) -> Response:
        return cls(id=command_id, ok=False, error=error)

    def to_wire(self) -> dict[str, Any]:
        return {**shallow_dict(self), "error": self.error.to_wire() if self.error else None}


@dataclass(frozen=True, slots=True)
class Event(_Envelope):
    """One numbered event. ``session`` is ``None`` for core-wide events.

    ``ts`` is an ISO-8601 UTC timestamp with milliseconds. The canonical JSON of
    :meth:`to_wire` is what the hub stores and what every client receives.
    """

    id: str
    seq: int
    session: str | None
    type: str
    ts: str
    body: dict[str, Any] = field(default_factory=dict)
