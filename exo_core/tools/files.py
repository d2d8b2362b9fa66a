"""File tools: ``read_file``, ``write_file``, ``append_file``, ``edit_file`` and ``delete_file``.

Relative paths resolve against the session's workspace. Disk work runs in a
worker thread so a slow card never stalls the event loop, and goes through
:mod:`exo_core.tools.safe_fs`: each tool works on the resolved file the gate
judged (``ToolContext.checked_paths``) or on none at all, so a symbolic link
swapped in after the check cannot send a write elsewhere. ``edit_file`` finds
its target exactly first, then line by line ignoring differences in
whitespace, and refuses an ambiguous match rather than guessing. ``append_file``
adds to the end and never rewrites what is there: "add this line to my list" is an
append, not a rewrite a small model could get wrong. :func:`planned_text` is what
a changing call would leave in the file, for the loop's check before it runs.
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path
from typing import Any

from exo_core.sandbox import ExodFiles
from exo_core.tools import safe_fs
from exo_core.tools.match import find_match, reindent
from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec, object_schema

__all__ = [
    "ReadFileTool",
    "WriteFileTool",
    "AppendFileTool",
    "EditFileTool",
    "DeleteFileTool",
    "resolve_path",
    "write_atomic",
    "appended",
    "edited",
    "planned_text",
]

_MAX_READ_BYTES = 2 * 1024 * 1024


def resolve_path(context: ToolContext, raw: Any) -> Path:
    """``raw`` as a path, relative ones against the workspace."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("'path' must be a non-empty string")
    path = Path(raw).expanduser()
    return path if path.is_absolute() else context.workspace / path


class _FileTool:
    """What the file tools share: ``path`` resolved and checked against the gate's judgement, work in a thread."""

    # Whether the tool acts on what a symbolic link points to (read, write, edit) or on the link (delete).
    follow = True

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            path = resolve_path(context, arguments.get("path"))
        except ValueError as exc:
            return ToolResult.error(str(exc))
        return await asyncio.to_thread(self._checked, path, arguments, context)

    def _checked(self, path: Path, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        exod = context.confinement().files
        try:
            target = safe_fs.check_target(path, context.checked_paths, follow=self.follow, exod=exod)
        except (OSError, ValueError) as exc:
            return ToolResult.error(_why(path, exc))
        return self.on_disk(target, arguments, exod)

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """The tool's work on the resolved ``path`` (runs in a worker thread); ``exod``'s files are refused."""
        raise NotImplementedError


class ReadFileTool(_FileTool):
    """Read a text file, optionally a range of lines."""

    spec = ToolSpec(
        name="read_file",
        ability="read files",
        description="Read a UTF-8 text file. Optional 1-based 'start' and 'end' lines.",
        parameters=object_schema(("path",), path="string", start="integer", end="integer"),
    )

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """The file's text, or the lines from ``start`` to ``end``."""
        start, end = arguments.get("start"), arguments.get("end")
        try:
            text = safe_fs.read_text(path, max_bytes=_MAX_READ_BYTES, exod=exod)
        except UnicodeDecodeError:
            return ToolResult.error(f"{path} is not UTF-8 text")
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                return ToolResult.error(f"{path} is larger than {_MAX_READ_BYTES} bytes; read a line range with bash")
            return ToolResult.error(_why(path, exc))
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
        ability="write files",
        description="Create or replace a UTF-8 text file with 'content'.",
        parameters=object_schema(("path", "content"), path="string", content="string"),
        risk="medium",
        changes_files=True,
    )

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """Write ``content`` to the file."""
        content = arguments.get("content")
        if not isinstance(content, str):
            return ToolResult.error("'content' must be a string")
        return write_atomic(path, content)


class AppendFileTool(_FileTool):
    """Add text to the end of a file (created when missing); what is already there stays as it is."""

    spec = ToolSpec(
        name="append_file",
        ability="add to files",
        description="Add 'content' to the end of a UTF-8 text file, on a new line; creates the file if missing. "
        "Use it to append or add lines: nothing already in the file changes.",
        parameters=object_schema(("path", "content"), path="string", content="string"),
        risk="medium",
        changes_files=True,
    )

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """Append ``content`` after what the file holds."""
        content = arguments.get("content")
        if not isinstance(content, str) or not content:
            return ToolResult.error("'content' must be a non-empty string")
        try:
            text = _existing_text(path)
        except UnicodeDecodeError:
            return ToolResult.error(f"{path} is not UTF-8 text")
        except OSError as exc:
            return ToolResult.error(_why(path, exc))
        return write_atomic(path, appended(text, content), verb="appended to")


class EditFileTool(_FileTool):
    """Replace one occurrence of ``old`` with ``new`` in a file."""

    spec = ToolSpec(
        name="edit_file",
        ability="edit files",
        description="Replace the text 'old' with 'new' in a file. 'old' must match "
        "exactly one place (whitespace differences are tolerated line by line).",
        risk="medium",
        parameters=object_schema(("path", "old", "new"), path="string", old="string", new="string"),
        changes_files=True,
    )

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """Replace the one match of ``old`` with ``new``."""
        old, new = arguments.get("old"), arguments.get("new")
        if not isinstance(old, str) or not old or not isinstance(new, str):
            return ToolResult.error("'old' must be a non-empty string and 'new' a string")
        try:
            text = safe_fs.read_text(path, max_bytes=_MAX_READ_BYTES, exod=exod)
        except UnicodeDecodeError:
            return ToolResult.error(f"{path} is not UTF-8 text")
        except OSError as exc:
            return ToolResult.error(_why(path, exc))
        result, how = edited(text, old, new)
        if result is None:
            return ToolResult.error(how.replace("{path}", str(path)))
        verb = "edited" if how == "exact" else f"edited (matched ignoring {how})"
        return write_atomic(path, result, verb=verb)


class DeleteFileTool(_FileTool):
    """Delete one file (never a directory).

    Small local models name this action ``delete_file`` on their own and cannot
    be relied on to write a correct ``rm`` line for ``bash``; the gate judges
    every call irreversible (``file.delete``), so it asks first. A symbolic link
    is removed itself, never what it points to.
    """

    follow = False

    spec = ToolSpec(
        name="delete_file",
        ability="delete files",
        description="Delete a file.",
        risk="high",
        parameters=object_schema(("path",), path="string"),
        effects=("irreversible",),  # what the gate judges every call (file.delete); the prompt reads it here
        changes_files=True,
    )

    def on_disk(self, path: Path, arguments: dict[str, Any], exod: ExodFiles) -> ToolResult:
        """Unlink ``path`` if it is a file or a symbolic link."""
        try:
            safe_fs.unlink(path)
        except IsADirectoryError:
            return ToolResult.error(f"{path} is a directory; delete_file deletes one file")
        except OSError as exc:
            return ToolResult.error(_why(path, exc, "delete"))
        return ToolResult(f"deleted {path}")


def appended(text: str, content: str) -> str:
    """``text`` with ``content`` added on a line of its own, ending with a newline."""
    if text and not text.endswith("\n"):
        text += "\n"
    if not content.endswith("\n"):
        content += "\n"
    return text + content


def edited(text: str, old: str, new: str) -> tuple[str | None, str]:
    """``text`` with its one match of ``old`` replaced by ``new``, and how it matched;
    ``(None, why)`` when ``old`` matches no place or several (``{path}`` in ``why`` names the file)."""
    match = find_match(text, old)
    if match is None:
        return (
            None,
            "'old' was not found in {path}, even ignoring whitespace; read the file and quote the lines exactly",
        )
    if match.count > 1:
        return None, (
            f"'old' matches {match.count} places in {{path}} ({match.how}); "
            "include more surrounding lines so it matches one"
        )
    replacement = reindent(new, match.indent)
    return text[: match.start] + replacement + text[match.end :], match.how


def planned_text(tool: str, arguments: dict[str, Any], path: Path) -> tuple[str, str] | None:
    """What ``path`` holds now and what the call of ``tool`` would leave in it (blocking: a worker thread);
    ``None`` when it cannot be said (not a text file, a call the tool would refuse, a tool not listed here)."""
    try:
        before = _existing_text(path)
    except (OSError, UnicodeDecodeError):
        return None
    content = arguments.get("content")
    if tool == "write_file" and isinstance(content, str):
        return before, content
    if tool == "append_file" and isinstance(content, str) and content:
        return before, appended(before, content)
    old, new = arguments.get("old"), arguments.get("new")
    if tool == "edit_file" and isinstance(old, str) and old and isinstance(new, str):
        after, _how = edited(before, old, new)
        return None if after is None else (before, after)
    if tool == "delete_file":
        return before, ""
    return None


def _existing_text(path: Path) -> str:
    """The file's text, or empty when there is no file yet."""
    try:
        return safe_fs.read_text(path, max_bytes=_MAX_READ_BYTES)
    except FileNotFoundError:
        return ""


def write_atomic(path: Path, content: str, *, verb: str = "wrote") -> ToolResult:
    """Write ``content`` to the resolved ``path`` (temporary file, fsync, rename); an error result on failure."""
    try:
        safe_fs.write_text(path, content)
    except OSError as exc:
        return ToolResult.error(_why(path, exc, "write"))
    return ToolResult(f"{verb} {path} ({len(content.encode('utf-8'))} bytes)")


def _why(path: Path, exc: OSError | ValueError, verb: str = "read") -> str:
    """An error result's text: what went wrong with ``path``, never the file's content."""
    if isinstance(exc, (safe_fs.PathChangedError, safe_fs.NotRegularFileError, safe_fs.ExodFileError)):
        return str(exc.strerror)
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {path}"
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a directory"
    if isinstance(exc, OSError):
        return f"cannot {verb} {path}: {exc.strerror}"
    return f"cannot use the path {path}: {exc}"
