"""Shell commands that change files: writers, movers, links, deleters, ``find``, ``dd``, ``tar``, ``zip``.

Every path a command changes is judged by :mod:`exo_core.gate.targets`: in the
workspace a change is reversible (and a deletion recoverable, which the default
policy still asks about); anywhere else, or somewhere decided at run time, it is
irreversible and asks. Options that take a value are skipped by name, so
``truncate -s 0 /etc/x`` judges ``/etc/x`` and not ``0``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

from exo_core.gate.axes import Finding
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx, exo_protected, shell_inside, write_target
from exo_core.gate.vcs import finding

__all__ = ["FILE_RULES", "exec_finding", "positionals"]

Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]

# Options that take a value, per command (short options may also carry it attached: -s0, -tDIR).
_WITH_ARG: dict[str, frozenset[str]] = {
    "cp": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "mv": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "ln": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "install": frozenset({"-m", "--mode", "-o", "--owner", "-g", "--group", "-t", "--target-directory", "-S"}),
    "tee": frozenset({"--output-error"}),
    "truncate": frozenset({"-s", "--size", "-r", "--reference"}),
    "touch": frozenset({"-d", "--date", "-t", "-r", "--reference"}),
    "mkdir": frozenset({"-m", "--mode"}),
    "mkfifo": frozenset({"-m", "--mode"}),
    "mknod": frozenset({"-m", "--mode"}),
    "chmod": frozenset({"--reference"}),
    "chown": frozenset({"--reference", "--from"}),
    "chgrp": frozenset({"--reference"}),
    "split": frozenset({"-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix"}),
    "sort": frozenset({"-k", "-t", "-T", "-S", "--parallel", "--key", "--field-separator", "--buffer-size"}),
    "patch": frozenset({"-p", "-d", "-i", "-o", "-r", "-z", "-F", "-D", "-B", "-V", "--directory", "--input"}),
    "zip": frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-Z"}),
    "unzip": frozenset({"-d", "-x", "-P"}),
}
_ATTACHED = frozenset({"-t", "-S", "-s", "-m", "-d", "-r", "-o", "-a", "-b", "-l", "-n", "-p", "-i", "-k", "-T"})


def positionals(argv: list[str], with_arg: frozenset[str]) -> tuple[list[tuple[int, str]], dict[str, str]]:
    """The positional words of ``argv`` (with their indices) and the option values, by option name."""
    out: list[tuple[int, str]] = []
    values: dict[str, str] = {}
    i = 1
    ended = False
    while i < len(argv):
        a = argv[i]
        if ended or not a.startswith("-") or a == "-":
            out.append((i, a))
        elif a == "--":
            ended = True
        elif "=" in a and a.startswith("--"):
            key, _, value = a.partition("=")
            values[key] = value
        elif a in with_arg:
            values[a] = argv[i + 1] if i + 1 < len(argv) else ""
            i += 1
        elif a[:2] in with_arg and a[:2] in _ATTACHED and len(a) > 2:
            values[a[:2]] = a[2:]
        else:
            values[a] = ""
        i += 1
    return out, values


def exec_finding(what: str, reason: str = "runs a program the gate cannot see") -> Finding:
    """An option or script that runs code: irreversible, since nothing says what it does."""
    return finding("exec.hidden", what, "irreversible", reason=reason)


def _word(cmd: SimpleCommand, index: int) -> bool:
    return cmd.word_is_expanded(index)


def _writer(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    words, values = positionals(argv, _WITH_ARG.get(name, frozenset()))
    if name in ("chmod", "chown", "chgrp") and "--reference" not in values:
        words = words[1:]  # the mode, owner or group
    if name == "split":
        words = words[1:2] if len(words) > 1 else []
    if not words:
        return [write_target(".", ctx, name)]
    return [write_target(w, ctx, name, expanded=_word(cmd, i)) for i, w in words]


def _copier(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    words, values = positionals(argv, _WITH_ARG[name])
    target = values.get("-t") or values.get("--target-directory")
    sources = words if target else words[:-1]
    if target is None and words:
        index, target = words[-1]
        expanded = _word(cmd, index)
    else:
        expanded = False
    out = [write_target(target or ".", ctx, name, expanded=expanded)]
    if name == "mv":
        for index, src in sources:
            if target in ("/dev/null",) or not ctx.inside(src, _word(cmd, index)):
                out.append(_delete(src, ctx, _word(cmd, index), f"mv {src} away"))
    return out


def _link(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    words, values = positionals(argv, _WITH_ARG["ln"])
    flags = "".join(k.lstrip("-") for k in values if not k.startswith("--"))
    symbolic = "s" in flags or "--symbolic" in values
    target_dir = values.get("-t") or values.get("--target-directory")
    if not words:
        return [finding("shell.read", "ln")]
    link = target_dir or (words[-1][1] if len(words) > 1 else os.path.basename(words[0][1]) or ".")
    out = [write_target(link, ctx, "link", expanded=len(words) > 1 and _word(cmd, words[-1][0]))]
    # A hard link to a file outside is that file: writing through it changes the person's file too.
    for index, points_to in words[:-1] if len(words) > 1 and not target_dir else words:
        base = ctx.path(os.path.dirname(link) or ".") if symbolic and not os.path.isabs(points_to) else None
        if base is not None and not _word(cmd, index):
            resolved = Path(os.path.realpath(Path(base) / os.path.expanduser(points_to)))
            inside = shell_inside(resolved, ctx.scope)
        else:
            inside = ctx.inside(points_to, _word(cmd, index))
        if not inside:
            out.append(
                finding(
                    "file.link.outside",
                    f"link to {points_to} (outside the workspace)",
                    "irreversible",
                    reason="a link out of the workspace lets later edits in the workspace change files outside",
                )
            )
    return out


def _delete(raw: str, ctx: Ctx, expanded: bool, summary: str) -> Finding:
    path = ctx.path(raw, expanded)
    why = exo_protected(path, ctx.scope, writing=True) if path is not None else ""
    if why:
        return finding("file.protected", f"{summary}: exod's own file", "irreversible", reason=why)
    roots = {Path(os.path.realpath(r)) for r in ctx.scope.workspace}
    if path is not None and shell_inside(path, ctx.scope) and path not in roots:
        return finding("file.delete", summary, "recoverable", reason="inside the workspace")
    why = "a path decided at run time" if path is None else "outside the workspace"
    return finding("file.delete.outside", summary, "irreversible", reason=f"{why}: nothing keeps a copy")


def _deleter(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    words, values = positionals(argv, frozenset())
    flags = "".join(k.lstrip("-") for k in values)
    recursive = name == "rm" and ("r" in flags or "R" in flags or "recursive" in values)
    out = []
    for index, raw in words:
        if name in ("shred", "srm"):
            out.append(finding("file.shred", f"shred {raw}", "irreversible", reason="overwritten beyond recovery"))
        else:
            out.append(_delete(raw, ctx, _word(cmd, index), f"{name}{' -r' if recursive else ''} {raw}"))
    return out or [finding("shell.read", name)]


_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    roots = []
    for a in argv[1:]:
        if a.startswith(("-", "(", "!", ")")):
            break
        roots.append(a)
    root = roots[0] if roots else "."
    below = root.rstrip("/") + "/match"
    out: list[Finding] = []
    for i, a in enumerate(argv):
        if a == "-delete":
            out.append(_delete(below, ctx, False, f"find {root} -delete"))
        elif a in _FIND_WRITES and i + 1 < len(argv):
            out.append(write_target(argv[i + 1], ctx, "find writes"))
        elif a in _FIND_EXEC:
            inner = argv[i + 1 :]
            inner = inner[: next((k for k, w in enumerate(inner) if w in (";", "+")), len(inner))]
            if inner and "{}" in inner[0]:
                out.append(exec_finding("find runs the files it finds", "the program is whatever find matches"))
            elif inner and any("{}" in w and w != "{}" for w in inner[1:]) and _runs_code(inner[0]):
                # find puts each file name into the script text: a file named $(…) is code.
                out.append(exec_finding("find writes file names into a script", "a file name becomes code"))
            elif inner and ctx.script is not None:
                out.extend(ctx.script(shlex.join(w.replace("{}", below) for w in inner), ctx.child()))
    return out or [finding("shell.read", "find files")]


def _runs_code(program: str) -> bool:
    name = program.rsplit("/", 1)[-1]
    shells = ("sh", "bash", "dash", "zsh", "ksh", "ash", "busybox", "env", "sudo")
    return name in shells or name.startswith(("python", "perl", "ruby", "node", "php"))


def _dd(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    target = next((a[3:] for a in argv[1:] if a.startswith("of=")), "")
    return [write_target(target, ctx, "dd to")] if target else [finding("shell.read", "dd")]


def _sort(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    _words, values = positionals(argv, _WITH_ARG["sort"] | {"-o", "--output"})
    target = values.get("-o") or values.get("--output")
    return [write_target(target, ctx, "sort into")] if target else [finding("shell.read", "sort")]


def _patch(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    words, values = positionals(argv, _WITH_ARG["patch"])
    targets = [w for _i, w in words[:1]] or [values.get("-d") or values.get("--directory") or "."]
    if values.get("-o"):
        targets.append(values["-o"])
    return [write_target(t, ctx, "patch") for t in targets]


_TAR_EXEC = frozenset(
    [
        "--checkpoint-action",
        "--to-command",
        "--use-compress-program",
        "--rsh-command",
        "--info-script",
        "--new-volume-script",
        "--rmt-command",
        "-I",
        "-F",
    ]
)


def _tar(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    args = list(argv[1:])
    if args and not args[0].startswith("-"):
        args[0] = "-" + args[0]  # old style: tar czf x.tgz
    mode, archive, directory = "", "", ""
    out: list[Finding] = []
    i = 0
    while i < len(args):
        a = args[i]
        key = a.split("=", 1)[0]
        if key in _TAR_EXEC or a.startswith("-I") and not a.startswith("--"):
            out.append(exec_finding(f"tar {key}: runs a program", "tar runs the program named by this option"))
        elif key in ("--directory", "--file") and "=" in a:
            directory, archive = (a.split("=", 1)[1], archive) if key == "--directory" else (directory, a[7:])
        elif key in ("--directory", "--file", "-C", "-f") and i + 1 < len(args):
            i += 1
            directory, archive = (args[i], archive) if key in ("--directory", "-C") else (directory, args[i])
        elif key == "--remove-files":
            out.append(finding("file.delete", "tar --remove-files", "recoverable"))
        elif key in ("-P", "--absolute-names"):
            mode += "P"
        elif a.startswith("-") and not a.startswith("--"):
            letters = a[1:]
            mode += letters.split("f", 1)[0]
            if "f" in letters:
                rest = letters.split("f", 1)[1]
                if rest:
                    archive = rest
                elif i + 1 < len(args):
                    i += 1
                    archive = args[i]
            if "C" in letters and i + 1 < len(args):
                i += 1
                directory = args[i]
        i += 1
    if "x" in mode:
        out.append(write_target(directory or ".", ctx, "extract into"))
        if "P" in mode:
            out.append(write_target("/", ctx, "extract absolute paths to"))
    elif archive and archive != "-" and any(m in mode for m in "cruA"):
        out.append(write_target(archive, ctx, "write the archive"))
    return out or [finding("shell.read", "tar")]


def _zip(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if any(a in ("-TT", "--unzip-command") or a.startswith("--unzip-command=") for a in argv):
        return [exec_finding("zip -TT: runs a program", "zip runs the test command named by -TT")]
    words, values = positionals(argv, _WITH_ARG[name])
    if name == "unzip":
        if "-l" in values or "-t" in values or "-v" in values:
            return [finding("shell.read", "unzip -l")]
        return [write_target(values.get("-d") or ".", ctx, "unzip into")]
    out = [write_target(words[0][1], ctx, "zip into")] if words else []
    if "-m" in values:
        out += [_delete(w, ctx, _word(cmd, i), f"zip -m moves {w}") for i, w in words[1:]]
    return out or [finding("shell.read", "zip")]


FILE_RULES: dict[str, Rule] = {
    **{n: _writer for n in ("touch", "mkdir", "tee", "truncate", "mkfifo", "mknod", "install", "split")},
    **{n: _writer for n in ("chmod", "chown", "chgrp", "chattr", "setfacl")},
    **{n: _writer for n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma")},
    **{n: _deleter for n in ("rm", "rmdir", "unlink", "shred", "srm")},
    "cp": _copier,
    "mv": _copier,
    "ln": _link,
    "find": _find,
    "dd": _dd,
    "sort": _sort,
    "patch": _patch,
    "tar": _tar,
    "zip": _zip,
    "unzip": _zip,
}
