"""File tools: ``read_file``, ``write_file``, ``edit_file`` and ``delete_file``.

Relative paths resolve against the session's workspace. Disk work runs in a
worker thread so a slow card never stalls the event loop. ``edit_file`` finds
its target exactly first, then line by line ignoring differences in
whitespace, and refuses an ambiguous match rather than guessing.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from exo_core.tools.match import find_match, reindent
from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec, object_schema

__all__ = ["ReadFileTool", "WriteFileTool", "EditFileTool", "DeleteFileTool", "resolve_path", "write_atomic"]

_MAX_READ_BYTES = 2 * 1024 * 1024


def resolve_path(context: ToolContext, raw: Any) -> Path:
    """``raw`` as a path, relative ones against the workspace."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("'path' must be a non-empty string")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else context.workspace / path


class _FileTool:
    """What the file tools share: ``path`` resolved against the workspace, the disk work in a thread."""

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            path = resolve_path(context, arguments.get("path"))
        except ValueError as exc:
            return ToolResult.error(str(exc))
        return await asyncio.to_thread(self.on_disk, path, arguments)

    def on_disk(self, path: Path, arguments: dict[str, Any]) -> ToolResult:
        """The tool's work on ``path`` (runs in a worker thread)."""
        raise NotImplementedError


class ReadFileTool(_FileTool):
    """Read a text file, optionally a range of lines."""

    spec = ToolSpec(
        name="read_file",
        description="Read a UTF-8 text file. Optional 1-based 'start' and 'end' lines.",
        parameters=object_schema(("path",), path="string", start="integer", end="integer"),
    )

    def on_disk(self, path: Path, arguments: dict[str, Any]) -> ToolResult:
        """The file's text, or the lines from ``start`` to ``end``."""
        start, end = arguments.get("start"), arguments.get("end")
        try:
            if path.stat().st_size > _MAX_READ_BYTES:
                return ToolResult.error(f"{path} is larger than {_MAX_READ_BYTES} bytes; read a line range with bash")
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ToolResult.error(f"no such file: {path}")
        except IsADirectoryError:
            return ToolResult.error(f"{path} is a directory")
        except UnicodeDecodeError:
            return ToolResult.error(f"{path} is not UTF-8 text")
        except OSError as exc:
            return ToolResult.error(f"cannot read {path}: {exc.strerror}")
        if start is None and end is None:
            return ToolResult(text)
        lines = text.splitlines(keepends=True)
        lo = max(1, int(start or 1))
        hi = min(len(lines), int(end or len(lines)))
        return ToolResult("".join(lines[lo - 1 : hi]))


class WriteFileTool(_FileTool):
    """Write a whole text file atomically (temp file, fsync, rename)."""

    spec = ToolSpec(
        name="write_file",
        description="Create or replace a UTF-8 text file with 'content'.",
        parameters=object_schema(("path", "content"), path="string", content="string"),
        risk="medium",
    )

    def on_disk(self, path: Path, arguments: dict[str, Any]) -> ToolResult:
        """Write ``content`` to the file."""
        content = arguments.get("content")
        if not isinstance(content, str):
            return ToolResult.error("'content' must be a string")
        return write_atomic(path, content)


class EditFileTool(_FileTool):
    """Replace one occurrence of ``old`` with ``new`` in a file."""

    spec = ToolSpec(
        name="edit_file",
        description="Replace the text 'old' with 'new' in a file. 'old' must match "
        "exactly one place (whitespace differences are tolerated line by line).",
        risk="medium",
        parameters=object_schema(("path", "old", "new"), path="string", old="string", new="string"),
    )

    def on_disk(self, path: Path, arguments: dict[str, Any]) -> ToolResult:
        """Replace the one match of ``old`` with ``new``."""
        old, new = arguments.get("old"), arguments.get("new")
        if not isinstance(old, str) or not old or not isinstance(new, str):
            return ToolResult.error("'old' must be a non-empty string and 'new' a string")
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ToolResult.error(f"no such file: {path}")
        except (OSError, UnicodeDecodeError) as exc:
            return ToolResult.error(f"cannot read {path}: {exc}")
        match = find_match(text, old)
        if match is None:
            return ToolResult.error(
                f"'old' was not found in {path}, even ignoring whitespace; read the file and quote the lines exactly"
            )
        if match.count > 1:
            return ToolResult.error(
                f"'old' matches {match.count} places in {path} ({match.how}); "
                "include more surrounding lines so it matches one"
            )
        replacement = reindent(new, match.indent)
        verb = "edited" if match.how == "exact" else f"edited (matched ignoring {match.how})"
        return write_atomic(path, text[: match.start] + replacement + text[match.end :], verb=verb)


class DeleteFileTool(_FileTool):
    """Delete one file (never a directory).

    Small local models name this action ``delete_file`` on their own and cannot
    be relied on to write a correct ``rm`` line for ``bash``; the gate's name rule
    (``data.delete``) makes every call ask first.
    """

    spec = ToolSpec(
        name="delete_file",
        description="Delete a file.",
        risk="high",
        parameters=object_schema(("path",), path="string"),
    )

    def on_disk(self, path: Path, arguments: dict[str, Any]) -> ToolResult:
        """Unlink ``path`` if it is a file or a symbolic link."""
        try:
            if path.is_dir() and not path.is_symlink():
                return ToolResult.error(f"{path} is a directory; delete_file deletes one file")
            path.unlink()
        except FileNotFoundError:
            return ToolResult.error(f"no such file: {path}")
        except OSError as exc:
            return ToolResult.error(f"cannot delete {path}: {exc.strerror}")
        return ToolResult(f"deleted {path}")


def write_atomic(path: Path, content: str, *, verb: str = "wrote") -> ToolResult:
    """Write ``content`` to ``path`` via a temporary file, fsync and rename; an error result on failure."""
    tmp = path.with_name(f".{path.name}.exo-tmp-{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        return ToolResult.error(f"cannot write {path}: {exc.strerror}")
    return ToolResult(f"{verb} {path} ({len(content.encode('utf-8'))} bytes)")
