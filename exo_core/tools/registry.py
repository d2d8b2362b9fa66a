"""The tool registry: names to tools, availability, toolsets, and a runner that never raises.

A tool may define ``available() -> bool`` (for example: is ``bash`` on the
PATH?); an unavailable tool is not offered to the model and a call to it is
an error result that says why. Toolsets narrow what a session or subagent
sees: :meth:`ToolRegistry.view` returns a registry over the named toolsets
only, sharing the tools.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from exo_core.errors import ConflictError, ExoError, NotFoundError
from exo_core.tools.spec import CheckedTool, Tool, ToolContext, ToolResult, ToolSpec

__all__ = ["ToolRegistry"]

log = logging.getLogger(__name__)


def _available(tool: Tool) -> bool:
    if not isinstance(tool, CheckedTool):
        return True
    try:
        return bool(tool.available())
    except Exception:  # a broken availability check hides the tool instead of failing the turn
        log.exception("availability check of tool %s failed; treating it as unavailable", tool.spec.name)
        return False


class ToolRegistry:
    """Registered tools; :meth:`run` turns every failure into an error result."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        toolsets: Iterable[str] | None = None,
        _shared: dict[str, Tool] | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = _shared if _shared is not None else {}
        self._toolsets = None if toolsets is None else frozenset(toolsets)
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register ``tool``; a second tool with the same name is refused."""
        if tool.spec.name in self._tools:
            raise ConflictError(f"a tool named {tool.spec.name!r} is already registered; pick another name")
        self._tools[tool.spec.name] = tool

    def remove(self, name: str) -> None:
        """Unregister ``name`` (plugin rollback); :class:`NotFoundError` when absent."""
        if self._tools.pop(name, None) is None:
            raise NotFoundError(f"no tool named {name!r} is registered")

    def view(self, toolsets: Iterable[str]) -> ToolRegistry:
        """A registry that sees only ``toolsets`` (for a session or a subagent); tools are shared."""
        return ToolRegistry(toolsets=toolsets, _shared=self._tools)

    def _visible(self, tool: Tool) -> bool:
        return self._toolsets is None or tool.spec.toolset in self._toolsets

    def specs(self) -> list[ToolSpec]:
        """Specs of the visible, available tools, sorted by name (:meth:`view` narrows what is visible)."""
        return [t.spec for _, t in sorted(self._tools.items()) if self._visible(t) and _available(t)]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if this registry sees it."""
        tool = self._tools.get(name)
        return tool if tool is not None and self._visible(tool) else None

    async def run(self, name: str, arguments: dict[str, Any], context: ToolContext, *, cut: bool = True) -> ToolResult:
        """Run one call. Unknown or unavailable tools, bad arguments and crashes become error results.

        ``cut=False`` leaves a long result whole, for a caller that redacts before it cuts (a cut first could
        leave half a secret at the cut, where no search recognises it).
        """
        tool = self.get(name)
        if tool is None:
            known = ", ".join(s.name for s in self.specs()) or "none"
            return ToolResult.error(f"unknown tool {name!r}; available tools: {known}")
        if not _available(tool):
            return ToolResult.error(f"tool {name!r} is not available on this machine right now")
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
        except Exception as exc:  # a tool bug must not end the turn
            log.exception("tool %s failed", name)
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        if not isinstance(result, ToolResult):
            return ToolResult.error(f"tool {name!r} returned {type(result).__name__}, not a ToolResult (a tool bug)")
        return result.cut() if cut else result
