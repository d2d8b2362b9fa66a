"""The Exo protocol: envelopes, typed bodies, strict and loose decoding.

Import from here; the submodules are private layout.
"""

from exo_core.protocol import commands, events
from exo_core.protocol.canonical import canonical_bytes, canonical_json
from exo_core.protocol.codec import (
    MAX_BODY_BYTES,
    body_to_wire,
    decode_body,
    decode_command,
    decode_event,
    decode_event_body,
    parse_json_object,
)
from exo_core.protocol.envelopes import PROTOCOL_VERSION, Command, ErrorInfo, Event, Response
from exo_core.protocol.registry import COMMANDS, EVENTS, MAX_TYPES, RegistryFullError, TypeRegistry

__all__ = [
    "PROTOCOL_VERSION",
    "MAX_BODY_BYTES",
    "MAX_TYPES",
    "Command",
    "Response",
    "Event",
    "ErrorInfo",
    "COMMANDS",
    "EVENTS",
    "TypeRegistry",
    "RegistryFullError",
    "canonical_json",
    "canonical_bytes",
    "decode_command",
    "decode_body",
    "decode_event",
    "decode_event_body",
    "body_to_wire",
    "parse_json_object",
    "commands",
    "events",
]
