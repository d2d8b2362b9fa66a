"""The tool seam: a spec the model sees, a handler that runs, a result it reads.

A tool failure is an error *result* the model can read and react to, never an
exception out of the registry. Results longer than :data:`MAX_RESULT_CHARS`
are cut (and marked) so one tool cannot flood the context.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

__all__ = ["Risk", "ToolSpec", "ToolResult", "ToolContext", "Tool", "MAX_RESULT_CHARS", "object_schema"]

MAX_RESULT_CHARS = 100_000

Risk = Literal["low", "medium", "high"]


def object_schema(required: tuple[str, ...], **properties: str | dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema: ``name="string"`` for a plain JSON type, a schema dict for anything more."""
    props = {name: {"type": schema} if isinstance(schema, str) else schema for name, schema in properties.items()}
    return {"type": "object", "properties": props, "required": list(required)}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool. ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]
    risk: Risk = "low"
    toolset: str = "core"
    # What the tool does on the gate's axes, when its name does not say it:
    # e.g. ("irreversible", "public", "affects") for a tool that posts.
    effects: tuple[str, ...] = ()

    def to_model(self) -> dict[str, Any]:
        """The description sent to a model (OpenAI function shape)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The text the model reads back, and whether it is an error."""

    content: str
    is_error: bool = False
    truncated: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=f"error: {message}", is_error=True)

    def cut(self, limit: int = MAX_RESULT_CHARS) -> ToolResult:
        """This result cut to ``limit`` characters, marked when it was cut."""
        if len(self.content) <= limit:
            return self
        note = f"\n[... cut: {len(self.content) - limit} more characters not shown]"
        return ToolResult(self.content[:limit] + note, self.is_error, True)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use: its workspace and a way to stream output."""

    workspace: Path
    call_id: str
    emit_output: Callable[[str, str], Awaitable[None]]
    session_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The resolved files the gate judged for this call; a file tool touches no other (None: no gate judged paths).
    checked_paths: frozenset[str] | None = None


class Tool(Protocol):
    """A tool: a spec and an async ``run``. Blocking handlers must use a worker thread."""

    spec: ToolSpec

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Do the work; return a result (raise only for bugs — the registry turns them into results)."""
        ...
