"""Files of the workspace the person names in a message: the reads their words point to.

"What does my todo.txt say I should call the plumber about?" asks about a
file's content without saying "read" or "open". A small chat model leans to
answering it in words (the chance that Qwen2.5-Coder 0.5B opens a call stays
below the call decision's threshold) and invents the answer from the store
(docs/benchmarks.md §15). A person who names a file that exists in the
workspace while asking about it is asking the assistant to look at it, so
the loop offers that read with the model's request
(:attr:`exo_core.seams.model.ModelRequest.pointed`) and a transport that
decides text vs call makes it when its model leans to text (docs/models.md,
"Text or a tool call", step 4).

A file is *named* by

* a path-like token, ``todo.txt`` or ``notes/plan.md``, bare, quoted or in
  backticks (a quoted name may hold spaces: ``"meeting notes.txt"``), which
  resolves inside the workspace to a regular file; matched exactly, else
  case-insensitively when exactly one file in that folder matches;
* "my/the/our/this NAME file" (``my notes file``) when exactly one file at
  the workspace's top has the stem NAME (case-insensitively).

Nothing is pointed at for a file that does not exist (a name to create is
``write_file``'s business), outside the workspace, or when the message asks
for a change (:func:`asks_for_change`): the model decides such a request as
before, and the core's judge rules on its call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from exo_core.gate.axes import Axes
from exo_core.gate.classify import classify
from exo_core.seams.model import ToolCall

__all__ = ["READ_TOOL", "MAX_POINTED", "asks_for_change", "named_files", "pointed_reads", "unread"]

# The tool that reads one file by its "path" (the gate's own file reader, exo_core.gate.classify).
READ_TOOL = "read_file"
# At most this many files are pointed at for one message (each read is one more model call).
MAX_POINTED = 3
_QUOTED = re.compile(r"[\"'`“‘]([^\"'`”’\n]{1,200})[\"'`”’]")
_PATH_TOKEN = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w.-]*[\w-]\.[A-Za-z0-9]{1,8})(?![\w/-])")
_STEM_FILE = re.compile(r"\b(?:my|the|our|this|that)\s+([A-Za-z0-9][\w-]{0,60})\s+file\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")
_WH = frozenset("what which who whom whose when where why how".split())
# Verbs that ask for a change to a file, in any wording of a request; the name of an offered tool the
# gate counts as changing something (as the judge's rule 6 does) adds its words, so a plugin's verbs count too.
_CHANGE_VERBS = frozenset(
    "add append change create delete edit erase fix insert move overwrite patch put remove rename replace "
    "rewrite save set update write".split()
)


def named_files(text: str, workspace: Path, *, limit: int = MAX_POINTED) -> list[str]:
    """The workspace files ``text`` names, as paths relative to ``workspace``, in the order named.

    Only regular files inside ``workspace`` (symlinks resolved) count; at most ``limit``.
    """
    try:
        root = workspace.resolve(strict=True)
    except OSError:
        return []
    if not root.is_dir():
        return []
    found: list[str] = []
    for candidate in _candidates(text):
        path = _resolve(root, candidate)
        if path is None or path in found:
            continue
        found.append(path)
        if len(found) >= limit:
            break
    return found


def _candidates(text: str) -> list[str]:
    """Names in ``text`` that may be files, in order: quoted strings, path-like tokens, "my NAME file"."""
    spots: list[tuple[int, str]] = []
    for match in _QUOTED.finditer(text):
        spots.append((match.start(), match.group(1).strip()))
    for match in _PATH_TOKEN.finditer(text):
        spots.append((match.start(), match.group(1)))
    for match in _STEM_FILE.finditer(text):
        spots.append((match.start(), "*" + match.group(1)))
    spots.sort(key=lambda spot: spot[0])
    return [name for _, name in spots if name]


def _resolve(root: Path, name: str) -> str | None:
    """``name`` as an existing file under ``root`` (relative, as on disk), or ``None``."""
    if name.startswith("*"):
        return _by_stem(root, name[1:])
    relative = name.strip().rstrip(".,;:!?")
    if not relative or relative.startswith(("/", "~")) or "\0" in relative:
        return None
    exact = _inside(root, root / relative)
    if exact is not None:
        return exact
    folder, _, base = relative.rpartition("/")
    parent = _inside_dir(root, root / folder) if folder else root
    if parent is None or not base:
        return None
    try:
        same = [p for p in parent.iterdir() if p.name.lower() == base.lower()]
    except OSError:
        return None
    if len(same) != 1:
        return None
    return _inside(root, same[0])


def _by_stem(root: Path, stem: str) -> str | None:
    """The one file at the top of ``root`` whose name without its extension is ``stem``."""
    try:
        same = [p for p in root.iterdir() if p.suffix and p.stem.lower() == stem.lower()]
    except OSError:
        return None
    if len(same) != 1:
        return None
    return _inside(root, same[0])


def _inside(root: Path, path: Path) -> str | None:
    """``path`` relative to ``root`` when it is a regular file there (symlinks resolved), else ``None``."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_file() or not real.is_relative_to(root):
        return None
    return real.relative_to(root).as_posix()


def _inside_dir(root: Path, path: Path) -> Path | None:
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_dir() or not real.is_relative_to(root):
        return None
    return real


def asks_for_change(text: str, tools: Sequence[Mapping[str, Any]] = ()) -> bool:
    """Whether ``text`` asks for a change rather than about content.

    A change verb (a fixed set, plus the words of the names of offered tools
    the gate places above a plain private read) in a message that is not a wh-question: "Add milk to todo.txt",
    "Can you rewrite notes.md?" ask for a change; "What should I change in
    config.toml?" asks about the file.
    """
    words = _WORD.findall(text.lower())
    if not words or words[0] in _WH:
        return False
    verbs = set(_CHANGE_VERBS)
    for tool in tools:
        name = str(tool.get("name", ""))
        if name and classify(name, {}).axes != Axes():
            verbs |= set(_WORD.findall(name.lower()))
    verbs -= {"file", "files"}
    return bool(verbs & set(words))


def pointed_reads(text: str, workspace: Path, tools: Sequence[Mapping[str, Any]]) -> tuple[ToolCall, ...]:
    """The reads ``text`` points to: one per named existing file, when the read tool is offered.

    Empty when the message asks for a change (:func:`asks_for_change`). Does
    file system work: run it off the event loop.
    """
    if not any(tool.get("name") == READ_TOOL for tool in tools):
        return ()
    if asks_for_change(text, tools):
        return ()
    names = named_files(text, workspace)
    return tuple(ToolCall(id=f"pointed_{n}", name=READ_TOOL, arguments={"path": p}) for n, p in enumerate(names))


def unread(pointed: Sequence[ToolCall], made: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """The pointed reads whose file no call in ``made`` has named yet (by path or file name)."""
    named: set[str] = set()
    for call in made:
        for value in call.arguments.values():
            if isinstance(value, str):
                named.add(_norm(value))
                named.add(_norm(value).rsplit("/", 1)[-1])
    out = []
    for call in pointed:
        path = _norm(str(call.arguments.get("path", "")))
        if path in named or path.rsplit("/", 1)[-1] in named:
            continue
        out.append(call)
    return tuple(out)


def _norm(path: str) -> str:
    text = path.strip().lower()
    while text.startswith("./"):
        text = text[2:]
    return text
