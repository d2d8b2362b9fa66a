"""The tool registry: names to tools, toolsets, and a runner that never raises."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from exo_core.errors import ConflictError, ExoError
from exo_core.tools.spec import Tool, ToolContext, ToolResult, ToolSpec

__all__ = ["ToolRegistry"]

log = logging.getLogger(__name__)


class ToolRegistry:
    """Registered tools; :meth:`run` turns every failure into an error result."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register ``tool``; a second tool with the same name is refused."""
        if tool.spec.name in self._tools:
            raise ConflictError(f"a tool named {tool.spec.name!r} is already registered")
        self._tools[tool.spec.name] = tool

    def specs(self, toolsets: Iterable[str] | None = None) -> list[ToolSpec]:
        """Specs of the tools in ``toolsets`` (all when ``None``), sorted by name."""
        wanted = None if toolsets is None else set(toolsets)
        return [t.spec for n, t in sorted(self._tools.items()) if wanted is None or t.spec.toolset in wanted]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if any."""
        return self._tools.get(name)

    async def run(self, name: str, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run one call. Unknown tools, bad arguments and crashes become error results."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult.error(f"unknown tool {name!r}; available tools: {known}")
        if not isinstance(arguments, dict):
            return ToolResult.error("tool arguments must be a JSON object")
        missing = [k for k in tool.spec.parameters.get("required", []) if k not in arguments]
        if missing:
            return ToolResult.error(f"missing required argument {missing[0]!r} for {name}")
        try:
            result = await tool.run(arguments, context)
        except asyncio.CancelledError:
            raise
        except ExoError as exc:
            return ToolResult.error(exc.message)
        except Exception as exc:  # noqa: BLE001 - a tool bug must not end the turn
            log.exception("tool %s failed", name)
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        return result.cut()
