"""The ``apply_patch`` tool: a unified diff parser and an all-or-nothing applier.

Accepts what ``git diff`` and ``diff -u`` write: per file a ``---``/``+++``
header (``a/``/``b/`` prefixes and ``/dev/null`` for created or deleted
files) and ``@@ -l,s +l,s @@`` hunks of context (`` ``), removed (``-``) and
added (``+``) lines; ``\\ No newline at end of file`` is honoured. Each hunk
is placed where its header says, else at the nearest exact occurrence of its
old lines, else by the whitespace-tolerant matcher (models miscount line
numbers and mangle indentation). Every hunk of every file is placed in memory
first; if any fails, nothing is written and the error names the file and hunk.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.errors import BadBodyError
from exo_core.tools import safe_fs
from exo_core.tools.files import resolve_path, write_atomic
from exo_core.tools.match import find_match
from exo_core.tools.spec import ToolContext, ToolResult, ToolSpec, object_schema

__all__ = ["ApplyPatchTool", "FilePatch", "Hunk", "parse_patch", "apply_hunks"]

_MAX_PATCH_SOURCE = 2 * 1024 * 1024
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: where the header says it starts (1-based), its old lines and its new lines."""

    old_start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FilePatch:
    """The hunks for one file; ``old_path``/``new_path`` are ``None`` for a created/deleted file."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)
    no_newline_at_end: bool = False


def _path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if path == "/dev/null":
        return None
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified diff; :class:`BadBodyError` (naming the line) when it is not one."""
    lines = text.splitlines()
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1  # "diff --git", "index …" and prose between files are skipped
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise BadBodyError(f"patch line {i + 2}: a '+++ ' header must follow '--- '", field="patch")
        old_path, new_path = _path(lines[i][4:]), _path(lines[i + 1][4:])
        i += 2
        hunks: list[Hunk] = []
        no_newline = False
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if m is None:
                raise BadBodyError(
                    f"patch line {i + 1}: bad hunk header {lines[i]!r}; expected '@@ -l,s +l,s @@'", field="patch"
                )
            i += 1
            old: list[str] = []
            new: list[str] = []
            while i < len(lines) and not lines[i].startswith(("@@", "--- ", "diff ")):
                tag, rest = lines[i][:1], lines[i][1:]  # an empty line is a context line whose space was lost
                if tag not in ("\\", "-", "+", " ", ""):
                    raise BadBodyError(
                        f"patch line {i + 1}: hunk lines start with ' ', '-' or '+', not {tag!r}", field="patch"
                    )
                no_newline = no_newline or tag == "\\"
                if tag in ("-", " ", ""):
                    old.append(rest)
                if tag in ("+", " ", ""):
                    new.append(rest)
                i += 1
            hunks.append(Hunk(int(m.group(1)), tuple(old), tuple(new)))
        if not hunks and not (old_path is None or new_path is None):
            raise BadBodyError(f"patch for {new_path}: no hunks", field="patch")
        files.append(FilePatch(old_path, new_path, tuple(hunks), no_newline))
    if not files:
        raise BadBodyError("no '--- '/'+++ ' file headers found; send a unified diff (git diff format)", field="patch")
    return files


def apply_hunks(text: str, hunks: tuple[Hunk, ...], name: str) -> str:
    """``text`` with every hunk applied in order; :class:`BadBodyError` naming the hunk that does not fit."""
    lines = text.splitlines()
    for n, hunk in enumerate(hunks, start=1):
        old, size = list(hunk.old), len(hunk.old)
        at = _place(lines, old, hunk.old_start - 1 if hunk.old_start else 0)
        if at is None:
            match = find_match("\n".join(lines), "\n".join(old)) if old else None
            if match is None or match.count > 1:
                why = "matches several places" if match is not None else "was not found"
                raise BadBodyError(f"{name}: hunk {n} {why}; re-read the file and make a fresh patch", field="patch")
            at = "\n".join(lines)[: match.start].count("\n")
        lines[at : at + size] = list(hunk.new)
    return "\n".join(lines)


def _place(lines: list[str], old: list[str], hint: int) -> int | None:
    if not old:
        return min(max(hint + 1, 0), len(lines)) if hint else 0
    starts = [i for i in range(len(lines) - len(old) + 1) if lines[i : i + len(old)] == old]
    return min(starts, key=lambda i: abs(i - hint)) if starts else None


class ApplyPatchTool:
    """Apply a unified diff to files in the workspace (all hunks or none)."""

    spec = ToolSpec(
        name="apply_patch",
        ability="apply patches",
        description="Apply a unified diff ('patch', as git diff writes it) to files "
        "in the workspace. All hunks apply or none do.",
        risk="medium",
        parameters=object_schema(("patch",), patch="string"),
        changes_files=True,
    )

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        patch = arguments.get("patch")
        if not isinstance(patch, str) or not patch.strip():
            return ToolResult.error("'patch' must be a non-empty unified diff")
        return await asyncio.to_thread(self._apply, patch, context)

    @staticmethod
    def _apply(patch: str, context: ToolContext) -> ToolResult:
        try:
            files = parse_patch(patch)
            plan: list[tuple[Path, str | None]] = []
            checked = context.checked_paths
            exod = context.confinement().files
            for fp in files:
                # Each file is touched at the resolved path the gate judged, or not at all (exo_core.tools.safe_fs).
                target = safe_fs.check_target(
                    resolve_path(context, fp.new_path or fp.old_path),
                    checked,
                    follow=fp.new_path is not None,
                    exod=exod,
                )
                if fp.old_path is None:
                    if os.path.lexists(target):
                        return ToolResult.error(f"{target} already exists; patch it instead of creating it")
                    body = "\n".join(line for h in fp.hunks for line in h.new)
                    plan.append((target, body + ("" if fp.no_newline_at_end else "\n")))
                    continue
                if fp.new_path is None:
                    plan.append((target, None))
                    continue
                source = safe_fs.check_target(resolve_path(context, fp.old_path), checked, exod=exod)
                text = safe_fs.read_text(source, max_bytes=_MAX_PATCH_SOURCE, exod=exod)
                updated = apply_hunks(text, fp.hunks, fp.new_path)
                ends = text.endswith("\n") and not fp.no_newline_at_end
                plan.append((target, updated + ("\n" if ends and updated else "")))
        except BadBodyError as exc:
            return ToolResult.error(exc.message)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return ToolResult.error(f"cannot apply the patch: {exc}")
        done: list[str] = []
        for path, content in plan:
            if content is None:
                try:
                    safe_fs.unlink(path)
                except FileNotFoundError:
                    pass  # already gone: the deletion the patch asks for holds
                except OSError as exc:
                    return ToolResult.error(
                        f"cannot delete {path}: {exc.strerror} (after: {', '.join(done) or 'nothing'})"
                    )
                done.append(f"deleted {path}")
                continue
            result = write_atomic(path, content, verb="patched")
            if result.is_error:
                return ToolResult.error(f"{result.content} (after: {', '.join(done) or 'nothing'})")
            done.append(result.content)
        return ToolResult("\n".join(done))
