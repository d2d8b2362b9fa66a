"""Everyday programs that can run code or write files through their own languages and options.

``awk`` (``system``, ``getline``, pipes, ``print > file``), ``sed`` (the ``e``,
``w`` and ``r`` commands, ``-i``), editors given commands (``vim -c '!…'``,
``emacs --eval``), pagers given commands (``less +!…``, ``man -P``), ``sqlite3``
dot commands (``.shell``, ``.system``, ``.load`` …), ``rename``'s Perl code, and
``make --eval``/``-f``. Without those they read (or, with ``-i``, edit their
files, judged by where the files are). See docs/gate.md, "Shell commands".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from exo_core.gate.axes import Finding
from exo_core.gate.execs import inline_finding, opaque, script_file, stdin_source
from exo_core.gate.filecmd import exec_finding, positionals
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx, write_target
from exo_core.gate.vcs import finding

__all__ = ["PROGRAM_RULES"]

Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]

_AWK_PIPE = re.compile(r"(?<!\|)\|(?!\|)|\|&")
_AWK_WRITE = re.compile(r"\bprintf?\b[^;}\n]*>")


def _awk(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    with_arg = frozenset({"-F", "-v", "-f", "-i", "-l", "--include", "--load", "-E", "-e", "--source"})
    words, values = positionals(argv, with_arg)
    if "-e" in values or "--source" in values:
        words = [(0, values.get("-e", "") + "\n" + values.get("--source", "")), *words]
    for key in ("-f", "-E", "--file", "--exec"):
        if key in values:
            return [script_file(values[key], ctx, False, f"{argv[0]} {key}")]
    if any(k in values for k in ("-i", "-l", "--include", "--load")):
        return [exec_finding(f"{argv[0]} loads an extension")]
    program = words[0][1] if words else ""
    if re.search(r"\b(system|getline)\b", program) or _AWK_PIPE.search(program) or _AWK_WRITE.search(program):
        return [exec_finding(f"{argv[0]} program runs commands or writes files")]
    if words and cmd.word_is_expanded(words[0][0]):
        return [opaque(f"{argv[0]} runs a program made at run time")]
    return [finding("shell.read", argv[0])]


def _sed(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    scripts: list[str] = []
    files: list[tuple[int, str]] = []
    in_place = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a.startswith("--in-place") or a.startswith("-") and not a.startswith("--") and "i" in a[1:]:
            in_place = True
        if a in ("-e", "--expression") or a.startswith("-") and not a.startswith("--") and a.endswith("e"):
            scripts.append(argv[i + 1] if i + 1 < len(argv) else "")
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a in ("-f", "--file") or a.startswith("--file=") or a.startswith("-") and a.endswith("f") and a != "-f":
            if "=" in a:
                path = a.split("=", 1)[1]
            elif i + 1 < len(argv):
                path = argv[i + 1]
            else:
                path = ""
            return [script_file(path, ctx, False, "sed -f")]
        elif a in ("-l", "--line-length"):
            i += 1
        elif not a.startswith("-"):
            files.append((i, a))
        i += 1
    if not scripts and files:
        scripts.append(files.pop(0)[1])
    if any(_sed_runs_or_writes(s) for s in scripts):
        return [exec_finding("sed script runs commands or writes files", "GNU sed's e, w and r commands")]
    if in_place:
        return [write_target(a, ctx, "sed -i", expanded=cmd.word_is_expanded(k)) for k, a in files] or [
            finding("shell.read", "sed")
        ]
    return [finding("shell.read", "sed")]


def _sed_runs_or_writes(script: str) -> bool:
    text = re.sub(r"\\.", "", script)
    text = re.sub(r"([sy])([^\w\s\\])(?:(?!\2).)*\2(?:(?!\2).)*\2", r"\1", text)
    text = re.sub(r"/[^/]*/", "", text)
    text = re.sub(r"[:btT]\s*[A-Za-z_]\w*", "", text)
    return bool(re.search(r"[eEwWrR]", text))


_EDITOR_CODE = ("-c", "--cmd", "-S", "-s", "-u", "--eval", "-l", "--load", "-f", "--funcall", "--batch", "--script")


def _editor(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if any(a in _EDITOR_CODE or a.startswith(("+", "--eval=", "--cmd=")) for a in argv[1:]):
        return [exec_finding(f"{name} runs editor commands", "editor commands can run programs (:!)")]
    if name in ("ed", "red", "ex") and stdin_source(cmd)[0]:
        return [exec_finding(f"{name} runs commands from its input", "ed and ex run programs with !")]
    files = [(i, a) for i, a in enumerate(argv) if i and not a.startswith("-")]
    return [write_target(a, ctx, f"edit with {name}", expanded=cmd.word_is_expanded(i)) for i, a in files] or [
        finding("exec.program", name, "recoverable")
    ]


def _pager(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if any(a.startswith(("+", "-P", "--pager", "-H", "--html")) for a in argv[1:]):
        return [exec_finding(f"{argv[0]} runs a command", "a pager's commands and man's -P run programs")]
    return [finding("shell.read", argv[0])]


_SQLITE_EXEC = re.compile(
    r"\.(shell|system|load|output|once|import|save|backup|restore|open|read|excel|cd)\b|"
    r"\battach\b|load_extension|writefile|\bedit\s*\(|vacuum\s+into",
    re.IGNORECASE,
)


def _sqlite(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    words = [(i, a) for i, a in enumerate(argv) if i and not a.startswith("-")]
    texts = [a for _i, a in words[1:]] + [cmd.stdin_script] + [a for a in argv if a.startswith(".")]
    if any(_SQLITE_EXEC.search(t) for t in texts) or "-cmd" in argv or "-init" in argv:
        return [exec_finding("sqlite3 runs a shell command or touches other files")]
    if stdin_source(cmd)[0] == "pipe":
        return [opaque("sqlite3 runs commands from its input")]
    if not words:
        return [finding("shell.read", "sqlite3")]
    return [write_target(words[0][1], ctx, "query the database", expanded=cmd.word_is_expanded(words[0][0]))]


def _rename(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    """``rename 's/a/b/' files``: the first word is Perl code (``s///e`` runs it), the rest are renamed."""
    words = [(i, a) for i, a in enumerate(argv) if i and not a.startswith("-")]
    if not words:
        return [finding("shell.read", "rename")]
    code = words[0][1]
    out = (
        []
        if re.fullmatch(r"s(.)[^`]*\1[^`]*\1[gi]*|y(.)[^`]*\2[^`]*\2", code)
        else [inline_finding("perl", code, "rename's")]
    )
    return out + [write_target(a, ctx, "rename", expanded=cmd.word_is_expanded(i)) for i, a in words[1:]]


def _make(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    """``make``: the workspace's Makefile is project code (logged); ``--eval`` or a makefile outside asks."""
    words, values = positionals(argv, frozenset({"-f", "--file", "--makefile", "-C", "--directory", "-j", "-l", "-o"}))
    if "--eval" in values or "-E" in values:
        return [exec_finding("make --eval runs make code given on the command line")]
    for key in ("-f", "--file", "--makefile", "-C", "--directory"):
        if key in values:
            return [script_file(values[key], ctx, cmd.word_is_expanded(argv.index(key) + 1), "make")]
    return [finding("exec.program", f"make {' '.join(w for _i, w in words[:1])}".strip(), "recoverable")]


PROGRAM_RULES: dict[str, Rule] = {
    **{n: _awk for n in ("awk", "gawk", "mawk", "nawk")},
    **{n: _editor for n in ("vi", "vim", "nvim", "view", "vimdiff", "gvim", "rvim", "ex", "ed", "red", "emacs")},
    **{n: _editor for n in ("nano", "pico", "micro", "joe", "kak", "hx", "mg")},
    **{n: _pager for n in ("less", "more", "most", "man")},
    "sed": _sed,
    "sqlite3": _sqlite,
    "rename": _rename,
    "prename": _rename,
    "file-rename": _rename,
    "make": _make,
    "gmake": _make,
}
