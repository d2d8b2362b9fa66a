"""Decoding and encoding of the envelopes and their bodies.

Commands are decoded strictly: anything not exactly right becomes a typed
:class:`~exo_core.errors.ProtocolError` naming what was wrong, never another
exception. Events are decoded loosely for clients: unknown event types pass
through as plain envelopes and unknown body fields are dropped.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union

from exo_core.errors import BadBodyError, MalformedMessageError, UnknownCommandError
from exo_core.protocol.envelopes import Command, Event
from exo_core.protocol.registry import COMMANDS, EVENTS
from exo_core.protocol.safejson import MAX_BODY_BYTES, MAX_DEPTH, json_kind, parse_json_object

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "parse_json_object",
    "decode_command",
    "decode_body",
    "decode_event",
    "decode_event_body",
    "body_to_wire",
]

# Scalar field types: the JSON values each accepts (a boolean is never a number) and how an error names it.
_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "true or false"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
    str: ((str,), "a string"),
}


def decode_command(data: bytes | str | dict[str, Any]) -> tuple[Command, Any]:
    """Decode a command strictly; returns the envelope and its typed body."""
    raw = data if isinstance(data, dict) else parse_json_object(data, what="command")
    unknown = set(raw) - {"id", "type", "body"}
    if unknown:
        raise MalformedMessageError(f"unknown command envelope field {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    command_id = raw.get("id")
    if not isinstance(command_id, str) or not command_id or len(command_id) > 200:
        raise MalformedMessageError("command 'id' must be a non-empty string of at most 200 characters", field="id")
    ctype = raw.get("type")
    if not isinstance(ctype, str):
        raise MalformedMessageError("command 'type' must be a string", field="type")
    body_cls = COMMANDS.get(ctype)
    if body_cls is None:
        raise UnknownCommandError(
            f"unknown command type {ctype[:80]!r}; see `exo protocol export` for the list", field="type"
        )
    body = {} if raw.get("body") is None else raw["body"]
    if not isinstance(body, dict):
        raise BadBodyError(f"command body must be a JSON object, not {json_kind(body)}", field="body")
    return Command(id=command_id, type=ctype, body=body), decode_body(body_cls, body)


def decode_body(cls: type[Any], body: dict[str, Any], *, strict: bool = True, path: str = "") -> Any:
    """Build dataclass ``cls`` from ``body``; strict mode refuses unknown, missing and mistyped fields."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [key for key in body if key not in fields] if strict else []
    if unknown:
        raise BadBodyError(f"unknown field {path + unknown[0]!r}", field=path + unknown[0])
    values: dict[str, Any] = {}
    for name, fld in fields.items():
        where = path + name
        if name not in body:
            if fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING:
                if strict:
                    raise BadBodyError(f"missing required field {where!r}", field=where)
                values[name] = {str: "", int: 0, float: 0.0, bool: False}.get(hints[name])  # neutral, or None
            continue
        try:
            values[name] = _convert(body[name], hints[name], where, strict)
        except BadBodyError:
            if strict:
                raise
    return cls(**values)


def decode_event(data: bytes | str | dict[str, Any]) -> Event:
    """Decode an event envelope loosely (clients): unknown fields are dropped."""
    raw = data if isinstance(data, dict) else parse_json_object(data, what="event")
    try:
        seq, etype = raw["seq"], raw["type"]
    except KeyError as exc:
        raise MalformedMessageError(f"event lacks {exc.args[0]!r}", field=str(exc.args[0])) from exc
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(etype, str):
        raise MalformedMessageError("event 'seq' must be an integer and 'type' a string")
    body = raw.get("body")
    session = raw.get("session")
    return Event(
        id=str(raw.get("id", "")),
        seq=seq,
        session=session if isinstance(session, str) else None,
        type=etype,
        ts=str(raw.get("ts", "")),
        body=body if isinstance(body, dict) else {},
    )


def decode_event_body(event: Event) -> Any | None:
    """The typed body of a known event type (loosely), or ``None`` for an unknown type."""
    cls = EVENTS.get(event.type)
    return None if cls is None else decode_body(cls, event.body, strict=False)


def body_to_wire(body: Any) -> dict[str, Any]:
    """A body dataclass as a plain JSON object."""
    return body if isinstance(body, dict) else dataclasses.asdict(body)


# -- internals ---------------------------------------------------------------


def _convert(value: Any, hint: Any, where: str, strict: bool) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        last: BadBodyError | None = None
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, where, strict)
            except BadBodyError as exc:
                last = exc
        raise last or BadBodyError(f"field {where!r} has the wrong type", field=where)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed or type(value) is not type(allowed[0]):
            raise BadBodyError(f"field {where!r} must be one of {list(allowed)}", field=where)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise BadBodyError(f"field {where!r} must be a list, not {json_kind(value)}", field=where)
        (item,) = typing.get_args(hint) or (Any,)
        return [_convert(v, item, f"{where}[{i}]", strict) for i, v in enumerate(value)]
    if origin is dict or dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise BadBodyError(f"field {where!r} must be an object, not {json_kind(value)}", field=where)
        return value if origin is dict else decode_body(hint, value, strict=strict, path=where + ".")
    if hint not in _SCALARS:
        raise BadBodyError(f"field {where!r} has an unsupported type", field=where)
    accepted, wanted = _SCALARS[hint]
    if not isinstance(value, accepted) or isinstance(value, bool) and hint is not bool:
        raise BadBodyError(f"field {where!r} must be {wanted}, not {json_kind(value)}", field=where)
    # The isinstance checks repeat what the accepted types above guarantee, for the type checker.
    if hint is int and isinstance(value, int) and abs(value) > 2**53:
        raise BadBodyError(f"field {where!r} is out of range", field=where)
    if hint is float and isinstance(value, int | float):
        return float(value)
    return value
