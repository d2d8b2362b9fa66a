"""Before a file tool changes a file: what it would remove, and whether the person asked for that.

A small model asked to "append a line" may rewrite the whole file and drop a line on the way. Each
call of a tool that changes files (``ToolSpec.changes_files``) is previewed here: the file as it is
and as the call would leave it (:func:`exo_core.tools.files.planned_text`). Lines it would remove
that the person's message does not name are *unnamed removals*; the loop then asks the person
first, showing the diff (``approval.requested``'s ``diff``), whatever the gate said.

A line changed into one at least :data:`EDITED_LINE_RATIO` alike (a typo fixed, a number changed)
was edited, not removed. A removed line is named when its words (without list marks, heading marks or a checkbox) appear
in the message ("replace 'buy milk' with 'buy oat milk'", "rename the heading Ideas"), or when the
message asks for the whole file to be rewritten, cleared or deleted. Blank lines are not content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo_core.tools.files import planned_text

__all__ = ["FileCheck", "MAX_DIFF_CHARS", "check_change", "shown_diff", "unnamed_removals"]

# A diff inside one event, far below the protocol's body limit and short enough to read on a card.
MAX_DIFF_CHARS = 4000
# A changed line this similar to one of its replacements was edited, not removed: nothing of it is lost that
# the diff on the event and the snapshot's undo do not show.
EDITED_LINE_RATIO = 0.85
_MARKS = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)?")
_WHOLE_FILE = re.compile(
    r"\b(?:rewrite|overwrite|replace (?:all|everything|the (?:whole|entire) (?:file|thing|text|content))|"
    r"clear|empty|wipe|delete (?:the )?(?:file|everything|all)|remove (?:everything|all)|start (?:over|fresh))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FileCheck:
    """One planned change: its diff (bounded) and the removed lines the message does not name."""

    path: str
    diff: str
    unnamed: tuple[str, ...]

    def reason(self) -> str:
        """Why the person is asked, naming the first lines that would go."""
        quoted = ", ".join(repr(line.strip()) for line in self.unnamed[:3])
        more = f" and {len(self.unnamed) - 3} more" if len(self.unnamed) > 3 else ""
        count = len(self.unnamed)
        return (
            f"it removes {count} line{'s' if count != 1 else ''} you did not mention from {self.path}: {quoted}{more}"
        )


def check_change(tool: str, arguments: dict[str, Any], targets: tuple[str, ...], request: str) -> FileCheck | None:
    """The planned change of a one-file tool call on its judged target (blocking: run it in a worker thread);
    ``None`` when there is nothing to preview (a patch, several files, a call the tool will refuse)."""
    if len(targets) != 1:
        return None
    path = Path(targets[0])
    planned = planned_text(tool, arguments, path)
    if planned is None:
        return None
    before, after = planned
    if before == after:
        return None
    shown = arguments.get("path") if isinstance(arguments.get("path"), str) else path.name
    return FileCheck(str(shown), shown_diff(before, after, str(shown)), tuple(unnamed_removals(before, after, request)))


def unnamed_removals(before: str, after: str, request: str) -> list[str]:
    """Lines of ``before`` that ``after`` drops or rewrites past an edit and ``request`` does not name
    (blank lines aside)."""
    if _WHOLE_FILE.search(request):
        return []
    wanted = _plain(request)
    import difflib  # only when a file changes: not imported by an idle exod (docs/benchmarks.md §2)

    old_lines = before.splitlines()
    new_lines = after.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    removed: list[str] = []
    for op, lo, hi, blo, bhi in matcher.get_opcodes():
        if op == "delete":
            removed.extend(old_lines[lo:hi])
        elif op == "replace":
            removed.extend(line for line in old_lines[lo:hi] if not _edited_into(line, new_lines[blo:bhi]))
    return [line for line in removed if _plain(line) and _plain(_MARKS.sub("", line)) not in wanted]


def _edited_into(line: str, replacements: list[str]) -> bool:
    """Whether ``line`` lives on, edited, as one of ``replacements`` (a typo fixed, a word or number changed)."""
    import difflib

    return any(
        difflib.SequenceMatcher(a=line, b=new, autojunk=False).ratio() >= EDITED_LINE_RATIO for new in replacements
    )


def shown_diff(before: str, after: str, name: str, *, limit: int = MAX_DIFF_CHARS) -> str:
    """A unified diff of the change, cut at ``limit`` characters on a line boundary (and saying so)."""
    import difflib  # only when a file changes: not imported by an idle exod

    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"{name} (now)", f"{name} (after)"
    )
    out: list[str] = []
    size = 0
    rest = 0
    for line in lines:
        text = line if line.endswith("\n") else line + "\n"
        if size + len(text) > limit:
            rest += 1
            continue
        out.append(text)
        size += len(text)
    if rest:
        out.append(f"[... {rest} more diff lines not shown]\n")
    return "".join(out)


def _plain(text: str) -> str:
    """Lower case, quotes and runs of spaces folded: how a line and a message are compared."""
    folded = text.lower().replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(folded.strip().strip("'\"`").split())
