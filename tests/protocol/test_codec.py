"""Strict command decoding, loose event decoding."""

from __future__ import annotations

import json

import pytest

from exo_core.errors import BadBodyError, MalformedMessageError, PayloadTooLargeError, UnknownCommandError
from exo_core.protocol import MAX_BODY_BYTES, Event, decode_command, decode_event, decode_event_body
from exo_core.protocol.commands import Hello, TurnSend
from exo_core.protocol.events import TurnCompleted


def cmd(type_: str, body: object) -> str:
    return json.dumps({"id": "1", "type": type_, "body": body})


def test_a_good_command_decodes_to_its_typed_body() -> None:
    command, body = decode_command(cmd("turn.send", {"session": "s", "text": "hi", "mode": "queue"}))
    assert command.type == "turn.send"
    assert body == TurnSend(session="s", text="hi", mode="queue")


def test_hello_carries_protocol_and_capabilities() -> None:
    _, body = decode_command(
        cmd(
            "hello",
            {
                "protocol": 1,
                "client": "device",
                "capabilities": {
                    "screen_columns": 21,
                    "screen_rows": 8,
                    "screen_pixels": [128, 64],
                    "buttons": ["talk", "allow"],
                    "voice_in": True,
                },
            },
        )
    )
    assert isinstance(body, Hello)
    assert body.capabilities.screen_pixels == [128, 64]
    assert body.capabilities.voice_in is True


@pytest.mark.parametrize(
    ("data", "error", "field"),
    [
        (cmd("turn.fly", {}), UnknownCommandError, "type"),
        (cmd("turn.send", {"session": "s"}), BadBodyError, "text"),
        (cmd("turn.send", {"session": "s", "text": "x", "colour": 1}), BadBodyError, "colour"),
        (cmd("turn.send", {"session": 5, "text": "x"}), BadBodyError, "session"),
        (cmd("turn.send", {"session": "s", "text": "x", "mode": "shout"}), BadBodyError, "mode"),
        (cmd("session.undo", {"session": "s", "turns": True}), BadBodyError, "turns"),
        (cmd("hello", {"protocol": 1, "capabilities": {"buttons": [1]}}), BadBodyError, "capabilities.buttons[0]"),
        (cmd("hello", {"protocol": 1, "capabilities": {"sparkles": 1}}), BadBodyError, "capabilities.sparkles"),
        (cmd("turn.send", [1, 2]), BadBodyError, "body"),
        (json.dumps({"id": "1", "type": "hello", "body": {"protocol": 1}, "extra": 1}), MalformedMessageError, "extra"),
        (json.dumps({"type": "hello"}), MalformedMessageError, "id"),
        (json.dumps({"id": "1", "type": 7}), MalformedMessageError, "type"),
    ],
)
def test_bad_commands_get_typed_errors_naming_the_field(data: str, error: type, field: str) -> None:
    with pytest.raises(error) as info:
        decode_command(data)
    assert info.value.field == field
    assert field.split("[")[0].split(".")[-1] in info.value.message or field in ("type", "id", "body")


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe",
        b"{",
        b"[]",
        b"null",
        b'"x"',
        b"{" * 100000 + b"}" * 100000,
        ("[" * 70 + "]" * 70).join(['{"id":"1","type":"hello","body":{"protocol":1,"x":', "}}"]),
    ],
)
def test_malformed_bytes_are_malformed_errors(data: bytes | str) -> None:
    with pytest.raises(MalformedMessageError):
        decode_command(data)


def test_oversize_is_refused_before_parsing() -> None:
    with pytest.raises(PayloadTooLargeError):
        decode_command(b" " * (MAX_BODY_BYTES + 1))


def test_events_decode_loosely() -> None:
    newer = {
        "id": "e",
        "seq": 3,
        "session": "s",
        "type": "turn.completed",
        "ts": "t",
        "body": {"turn_id": "t1", "stop_reason": "end", "sparkle": True},
        "future": 1,
    }
    event = decode_event(json.dumps(newer))
    assert isinstance(event, Event) and event.seq == 3
    body = decode_event_body(event)
    assert body == TurnCompleted(turn_id="t1", stop_reason="end")
    unknown = decode_event(json.dumps({"seq": 4, "type": "hologram.shown", "body": {"x": 1}}))
    assert decode_event_body(unknown) is None and unknown.body == {"x": 1}
