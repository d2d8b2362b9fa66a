"""Tools over the core's own state: ``search`` (past sessions), ``recall`` (the store), ``ui`` (a panel).

They reach the core through narrow seams, never by importing it: the loop
puts ``session_search`` and ``emit_panel`` into :attr:`ToolContext.extra`,
and ``recall`` takes a :class:`Recall` — the store's retrieval, which is built
elsewhere, plugs in there. Until it does, :class:`UnconfiguredRecall` answers
with an error result that says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec, object_schema

__all__ = ["Recall", "SessionRecall", "UnconfiguredRecall", "RecallTool", "SearchTool", "UiTool", "PANEL_KINDS"]

PANEL_KINDS = ("diff", "approval", "taste", "session_tree", "file_preview", "table", "text")


class Recall(Protocol):
    """The store's retrieval: the pack of beliefs and items for a query, as text with ids."""

    async def recall(self, query: str, *, limit: int) -> str:
        """Text for the model (each block carrying its id); raise an ``ExoError`` when it cannot."""
        ...


@runtime_checkable
class SessionRecall(Protocol):
    """An optional capability of a :class:`Recall`: leave the asking session's own turns out.

    Without it the person's current question came back from ``recall`` as a
    past turn (the answer benchmark, docs/benchmarks.md).
    """

    async def recall_for(self, query: str, *, limit: int, session_id: str) -> str:
        """As :meth:`Recall.recall`, without the turns of ``session_id``."""
        ...


class UnconfiguredRecall:
    """The default: no store retrieval is plugged into this core."""

    async def recall(self, query: str, *, limit: int) -> str:
        """Always the same explanation, as an error the registry returns to the model."""
        from exo_core.errors import UnsupportedError

        raise UnsupportedError(
            "store retrieval is not configured in this core; start exod with a store "
            "(exo init, then exo serve --store DIR) or install a memory plugin"
        )


class RecallTool:
    """``recall``: ask the person's store what it knows about a query."""

    spec = ToolSpec(
        name="recall",
        ability="recall what the person's notes say",
        description="Recall what the person's store knows about 'query' (beliefs and saved items, with ids).",
        parameters=object_schema(("query",), query="string", limit="integer"),
        toolset="memory",
    )

    def __init__(self, recall: Recall | None = None) -> None:
        self.recall: Recall = recall or UnconfiguredRecall()

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult.error("'query' must be a non-empty string")
        limit = _limit(arguments.get("limit"), 8)
        if isinstance(self.recall, SessionRecall) and context.session_id:
            text = await self.recall.recall_for(query, limit=limit, session_id=context.session_id)
        else:
            text = await self.recall.recall(query, limit=limit)
        return ToolResult(text or "(nothing recalled)")


class SearchTool:
    """``search``: full-text search over past sessions' messages."""

    spec = ToolSpec(
        name="search",
        ability="search past conversations",
        description="Search past conversations for 'query'; returns matching snippets with session ids.",
        parameters=object_schema(("query",), query="string", limit="integer"),
        toolset="memory",
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult.error("'query' must be a non-empty string")
        search: Callable[[str, int], Awaitable[list[dict[str, Any]]]] | None = context.extra.get("session_search")
        if search is None:
            return ToolResult.error("session search is not available here (no sessions database in this context)")
        hits = await search(query, _limit(arguments.get("limit"), 10))
        if not hits:
            return ToolResult(f"no past messages match {query!r}")
        return ToolResult("\n".join(f"[{h['session']} #{h['message_id']} {h['role']}] {h['snippet']}" for h in hits))


class UiTool:
    """``ui``: open a panel on the person's screens (emits ``ui.panel``)."""

    spec = ToolSpec(
        name="ui",
        ability="show panels on the screen",
        description="Open a panel on the person's screen: 'kind' ("
        + ", ".join(PANEL_KINDS)
        + "), 'title', and 'data' (an object the panel shows).",
        toolset="ui",
        parameters=object_schema(
            ("kind",), kind={"type": "string", "enum": list(PANEL_KINDS)}, title="string", data="object"
        ),
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        kind, title, data = arguments.get("kind"), arguments.get("title", ""), arguments.get("data", {})
        if kind not in PANEL_KINDS:
            return ToolResult.error(f"'kind' must be one of {', '.join(PANEL_KINDS)}")
        if not isinstance(title, str) or not isinstance(data, dict):
            return ToolResult.error("'title' must be a string and 'data' an object")
        emit = context.extra.get("emit_panel")
        if emit is None:
            return ToolResult.error("no screen is attached to this context; panels cannot be shown")
        await emit(kind, title, data)
        return ToolResult(f"opened a {kind} panel" + (f" '{title}'" if title else ""))


def _limit(raw: Any, default: int) -> int:
    return max(1, min(50, raw)) if isinstance(raw, int) and not isinstance(raw, bool) else default
