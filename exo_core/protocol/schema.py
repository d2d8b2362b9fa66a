"""JSON Schema and TypeScript types generated from the protocol dataclasses.

Never written by hand: ``exo protocol export`` regenerates
``exo_core/protocol/generated/`` and a test fails when the committed files are
stale. Output is deterministic (sorted, canonical) so the comparison is exact.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from exo_core.protocol import commands as _commands  # noqa: F401  (registers command types)
from exo_core.protocol import events as _events  # noqa: F401  (registers event types)
from exo_core.protocol.envelopes import PROTOCOL_VERSION
from exo_core.protocol.registry import COMMANDS, EVENTS

__all__ = ["json_schema", "typescript", "write_generated", "GENERATED_DIR", "generated_files"]

GENERATED_DIR = Path(__file__).parent / "generated"


# Scalar field types: their JSON Schema type and their TypeScript type.
_SCALARS = {
    str: ("string", "string"),
    int: ("integer", "number"),
    float: ("number", "number"),
    bool: ("boolean", "boolean"),
}


def _describe(hint: Any, defs: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A field type as JSON Schema (nested dataclasses go into ``defs``) and as TypeScript."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return {}, "unknown"
    if origin in (Union, types.UnionType):
        options = [_describe(a, defs) for a in typing.get_args(hint)]
        return {"anyOf": [schema for schema, _ in options]}, " | ".join(ts for _, ts in options)
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}, " | ".join(json.dumps(a) for a in typing.get_args(hint))
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        schema, ts = _describe(item, defs)
        return {"type": "array", "items": schema}, f"Array<{ts}>"
    if origin is dict:
        return {"type": "object"}, "Record<string, unknown>"
    if hint is type(None):
        return {"type": "null"}, "null"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # a body class, not an instance
        name = hint.__name__
        if name not in defs:
            defs[name] = {}
            defs[name] = _object_schema(hint, defs)
        return {"$ref": f"#/$defs/{name}"}, name
    return {"type": _SCALARS[hint][0]}, _SCALARS[hint][1]


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _object_schema(cls: type[Any], defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props = {f.name: _describe(hints[f.name], defs)[0] for f in dataclasses.fields(cls)}
    required = [f.name for f in dataclasses.fields(cls) if _required(f)]
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    if required:
        schema["required"] = required
    return schema


def json_schema() -> dict[str, Any]:
    """One JSON Schema document describing envelopes, every command and event body."""
    defs: dict[str, Any] = {}
    commands = {name: _object_schema(cls, defs) for name, cls in COMMANDS.items()}
    events = {name: _object_schema(cls, defs) for name, cls in EVENTS.items()}
    error = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Exo protocol {PROTOCOL_VERSION}",
        "protocol": PROTOCOL_VERSION,
        "$defs": dict(sorted(defs.items())),
        "commands": commands,
        "events": events,
        "envelopes": {
            "Command": {
                "type": "object",
                "required": ["id", "type"],
                "additionalProperties": False,
                "properties": {"id": {"type": "string"}, "type": {"enum": list(COMMANDS)}, "body": {"type": "object"}},
            },
            "Response": {
                "type": "object",
                "required": ["id", "ok", "result", "error"],
                "properties": {
                    "id": {"type": ["string", "null"]},
                    "ok": {"type": "boolean"},
                    "result": {"type": ["object", "null"]},
                    "error": {"anyOf": [error, {"type": "null"}]},
                },
            },
            "Event": {
                "type": "object",
                "required": ["id", "seq", "session", "type", "ts", "body"],
                "properties": {
                    "id": {"type": "string"},
                    "seq": {"type": "integer"},
                    "session": {"type": ["string", "null"]},
                    "type": {"type": "string"},
                    "ts": {"type": "string"},
                    "body": {"type": "object"},
                },
            },
        },
    }


def _ts_interface(name: str, cls: type[Any]) -> str:
    hints = typing.get_type_hints(cls)
    doc = [f"/** {' '.join(cls.__doc__.split())} */"] if cls.__doc__ else []
    members = [
        f"  {f.name}{'' if _required(f) else '?'}: {_describe(hints[f.name], {})[1]};" for f in dataclasses.fields(cls)
    ]
    return "\n".join([*doc, f"export interface {name} {{", *members, "}"])


def typescript() -> str:
    """TypeScript declarations for the envelopes and every body."""
    nested: dict[str, type[Any]] = {}
    for _, cls in COMMANDS.items() + EVENTS.items():
        for hint in typing.get_type_hints(cls).values():
            for arg in (hint, *typing.get_args(hint)):
                if isinstance(arg, type) and dataclasses.is_dataclass(arg):  # a body class, not an instance
                    nested[arg.__name__] = arg
    parts = [
        "// Generated by `exo protocol export` from exo_core/protocol. Do not edit.",
        f"export const PROTOCOL_VERSION = {PROTOCOL_VERSION};",
        "export interface ErrorInfo { code: string; message: string; field?: string; }",
        "export interface Command<T = unknown> { id: string; type: CommandType; body?: T; }",
        "export interface Response { id: string | null; ok: boolean; "
        "result: Record<string, unknown> | null; error: ErrorInfo | null; }",
        "export interface Event<T = Record<string, unknown>> { id: string; seq: number; "
        "session: string | null; type: string; ts: string; body: T; }",
        "export type CommandType = " + " | ".join(json.dumps(n) for n in COMMANDS) + ";",
        "export type EventType = " + " | ".join(json.dumps(n) for n in EVENTS) + ";",
    ]
    parts.extend(_ts_interface(name, nested[name]) for name in sorted(nested))
    kinds = (("CommandBodies", COMMANDS, "Body"), ("EventBodies", EVENTS, "Event"))
    for _, registry, suffix in kinds:
        parts.extend(_ts_interface(cls.__name__ + suffix, cls) for _, cls in registry.items())
    for title, registry, suffix in kinds:
        rows = "\n".join(f"  {json.dumps(w)}: {c.__name__}{suffix};" for w, c in registry.items())
        parts.append(f"export interface {title} {{\n{rows}\n}}")
    return "\n\n".join(parts) + "\n"


def generated_files() -> dict[str, str]:
    """File name to exact content of every generated file."""
    return {
        "protocol.schema.json": json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "protocol.d.ts": typescript(),
    }


def write_generated(directory: Path = GENERATED_DIR) -> list[Path]:
    """Write the generated files into ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    files = generated_files()
    for name, content in files.items():
        (directory / name).write_text(content, encoding="utf-8")
    return [directory / name for name in files]
