"""Tools: the spec/handler seam, the registry and the built-in tools."""

from exo_core.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from exo_core.tools.registry import ToolRegistry
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
    "ReadFileTool",
    "WriteFileTool",
    "EditFileTool",
    "BashTool",
    "builtin_tools",
]


def builtin_tools() -> ToolRegistry:
    """A registry with the basic built-in tools."""
    return ToolRegistry([ReadFileTool(), WriteFileTool(), EditFileTool(), BashTool()])
