"""Finding the text a model quoted, despite the ways models misquote it.

Models quote the line they want to change with different indentation,
trailing spaces, tabs for spaces, or a collapsed run of blanks. The matcher
tries, in order, and stops at the first level with exactly one match:

1. exact text;
2. line by line, ignoring trailing whitespace;
3. line by line, ignoring all differences in whitespace;
4. line by line, by similarity (``difflib`` ratio at least :data:`MIN_SIMILARITY`
   on the whitespace-normalized lines, with the best block clearly ahead of
   the next one).

More than one match at a level is refused (the caller asks for more
context) rather than guessed. When the match's indentation differs from the
quote's, the replacement is re-indented by the same amount so the edit
keeps the file's layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Match", "find_match", "reindent", "MIN_SIMILARITY"]

MIN_SIMILARITY = 0.85
_MARGIN = 0.05
_MAX_SIMILARITY_LINES = 5000


@dataclass(frozen=True, slots=True)
class Match:
    """Where the quote was found (character span), how, and the indentation to add to the replacement."""

    start: int
    end: int
    how: str
    indent: str = ""
    count: int = 1


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def find_match(text: str, old: str) -> Match | None:
    """The unique place ``old`` occurs in ``text`` at the strictest level; ``count`` > 1 means ambiguous."""
    count = text.count(old)
    if count == 1:
        start = text.index(old)
        return Match(start, start + len(old), "exact")
    if count > 1:
        return Match(-1, -1, "exact", count=count)
    lines = text.splitlines(keepends=True)
    want = old.strip("\n").splitlines()
    if not want or not lines:
        return None
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    n = len(want)
    windows = range(len(lines) - n + 1)
    for how, same in (
        ("trailing whitespace", lambda a, b: a.rstrip() == b.rstrip()),
        ("whitespace", lambda a, b: _norm(a) == _norm(b)),
    ):
        found = [i for i in windows if all(same(lines[i + k], want[k]) for k in range(n))]
        if len(found) == 1:
            return _span(found[0], n, lines, offsets, want, old, how)
        if len(found) > 1:
            return Match(-1, -1, how, count=len(found))
    if len(lines) > _MAX_SIMILARITY_LINES:
        return None  # similarity over every window of a huge file costs too much on a small board
    import difflib  # the last resort of an edit: not imported by an idle exod (docs/benchmarks.md §2)

    target = "\n".join(_norm(w) for w in want)
    scored = sorted(
        (
            (
                difflib.SequenceMatcher(
                    None, "\n".join(_norm(x) for x in lines[i : i + n]), target, autojunk=False
                ).ratio(),
                i,
            )
            for i in windows
        ),
        reverse=True,
    )
    if scored and scored[0][0] >= MIN_SIMILARITY:
        if len(scored) > 1 and scored[1][0] > scored[0][0] - _MARGIN:
            return Match(-1, -1, "similarity", count=2)
        return _span(scored[0][1], n, lines, offsets, want, old, f"similarity {scored[0][0]:.2f}")
    return None


def _span(i: int, n: int, lines: list[str], offsets: list[int], want: list[str], old: str, how: str) -> Match:
    end = offsets[i + n]
    if lines[i + n - 1].endswith("\n") and not old.endswith("\n"):
        end -= 1
    have, quoted = _indent(lines[i]), _indent(want[0])
    indent = have[: len(have) - len(quoted)] if have.endswith(quoted) and len(have) > len(quoted) else ""
    return Match(offsets[i], end, how, indent)


def reindent(new: str, indent: str) -> str:
    """``new`` with ``indent`` added to each non-empty line (to match where the quote was found)."""
    return "".join(indent + line if line.strip() else line for line in new.splitlines(keepends=True))
