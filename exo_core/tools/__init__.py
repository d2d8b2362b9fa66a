"""Tools: the spec/handler seam, the registry and the built-in tools."""

from exo_core.tools.files import AppendFileTool, DeleteFileTool, EditFileTool, ReadFileTool, WriteFileTool
from exo_core.tools.function import FunctionTool
from exo_core.tools.patch import ApplyPatchTool
from exo_core.tools.registry import ToolRegistry
from exo_core.tools.session_tools import Recall, RecallTool, SearchTool, UiTool, UnconfiguredRecall
from exo_core.tools.shell import BashTool
from exo_core.tools.spec import MAX_RESULT_CHARS, Risk, Tool, ToolContext, ToolResult, ToolSpec

__all__ = [
    "Tool",
    "ToolSpec",
    "ToolResult",
    "ToolContext",
    "Risk",
    "MAX_RESULT_CHARS",
    "ToolRegistry",
    "FunctionTool",
    "ReadFileTool",
    "WriteFileTool",
    "AppendFileTool",
    "EditFileTool",
    "DeleteFileTool",
    "ApplyPatchTool",
    "BashTool",
    "SearchTool",
    "RecallTool",
    "Recall",
    "UnconfiguredRecall",
    "UiTool",
    "builtin_tools",
]


def builtin_tools(recall: Recall | None = None) -> ToolRegistry:
    """A registry with every built-in tool; ``recall`` is the store's retrieval when one is configured."""
    return ToolRegistry(
        [
            ReadFileTool(),
            WriteFileTool(),
            AppendFileTool(),
            EditFileTool(),
            DeleteFileTool(),
            ApplyPatchTool(),
            BashTool(),
            SearchTool(),
            RecallTool(recall),
            UiTool(),
        ]
    )
