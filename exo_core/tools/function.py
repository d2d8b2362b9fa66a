"""Tools made from plain functions (how plugins register tools).

A handler may be a coroutine function or a plain (blocking) function; a plain
one runs in a worker thread so a slow handler never stalls the event loop.
It receives the arguments as keyword arguments, plus ``context`` if it
declares a parameter of that name, and returns text, a JSON-able value
(serialized) or a :class:`ToolResult`. An availability check, when given,
hides the tool from the model while it returns false.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec

__all__ = ["FunctionTool"]


class FunctionTool:
    """A :class:`~exo_core.tools.spec.Tool` around a handler function."""

    def __init__(
        self, spec: ToolSpec, handler: Callable[..., Any], *, available: Callable[[], bool] | None = None
    ) -> None:
        self.spec = spec
        self._handler = handler
        self._available = available
        self._is_async = inspect.iscoroutinefunction(handler)
        try:
            self._wants_context = "context" in inspect.signature(handler).parameters
        except (TypeError, ValueError):  # builtins without a signature: call with arguments only
            self._wants_context = False

    def available(self) -> bool:
        """Whether the tool can run here now (its check, if any)."""
        return self._available() if self._available is not None else True

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Call the handler; blocking handlers in a worker thread."""
        kwargs = dict(arguments)
        if self._wants_context:
            kwargs["context"] = context
        if self._is_async:
            value = await self._handler(**kwargs)
        else:
            value = await asyncio.to_thread(lambda: self._handler(**kwargs))
        if isinstance(value, ToolResult):
            return value
        return ToolResult(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
