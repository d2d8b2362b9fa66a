"""What one simple shell command does, on the four axes; and a whole command line, command by command.

:func:`classify_line` reads a line (:mod:`exo_core.gate.shell`) and judges each
simple command in order, following ``cd`` so relative paths land where the shell
would put them. :func:`classify_command` first sees through prefixes that run
another command (``sudo``, ``env``, ``nice``, ``timeout``, ``xargs``,
``busybox``, ``chroot``, ``strace`` …), judges the variables set for it
(``LD_PRELOAD=…``, ``PATH=…``, ``GIT_SSH_COMMAND=…``), then looks the command up:
files (:mod:`exo_core.gate.filecmd`), code runners
(:mod:`exo_core.gate.execs`), the network (:mod:`exo_core.gate.netcmd`), the
system (:mod:`exo_core.gate.system`), ``git`` and ``gh``
(:mod:`exo_core.gate.vcs`). Redirections are reads and writes of their targets;
any word naming a secret file (a private key, cloud credentials, the Exo home's
keys) asks.

A command the gate does not know is ``recoverable`` and ``private`` (it runs and
is logged): asking about every unknown program would train the person to approve
by reflex (docs/gate.md). But one handed code (``-c``, ``-e``, a heredoc), one named by a
path outside the system's folders, or one whose name is decided at run time asks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from exo_core.gate.axes import Finding
from exo_core.gate.execs import EXEC_RULES, interpreter, is_python, script_file, shell_script, unknown_program
from exo_core.gate.filecmd import FILE_RULES, exec_finding
from exo_core.gate.netcmd import NET_RULES
from exo_core.gate.prefixes import ROOT, assignments, unwrap, xargs_replace
from exo_core.gate.programs import PROGRAM_RULES
from exo_core.gate.scope import Scope
from exo_core.gate.shell import SimpleCommand, parse_shell
from exo_core.gate.system import SYSTEM_RULES
from exo_core.gate.targets import Ctx, read_targets, write_target
from exo_core.gate.vcs import classify_gh, classify_git, finding

__all__ = ["classify_command", "classify_line", "unwrap"]

_READ_ONLY = frozenset(
    [
        "ls",
        "cat",
        "head",
        "tail",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "wc",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cmp",
        "comm",
        "file",
        "stat",
        "which",
        "whereis",
        "type",
        "echo",
        "printf",
        "pwd",
        "whoami",
        "id",
        "date",
        "cal",
        "true",
        "false",
        "test",
        "[",
        "[[",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "du",
        "df",
        "free",
        "uptime",
        "ps",
        "pgrep",
        "top",
        "htop",
        "printenv",
        "hostname",
        "uname",
        "jq",
        "yq",
        "column",
        "nl",
        "od",
        "hexdump",
        "xxd",
        "md5sum",
        "sha256sum",
        "sha1sum",
        "sha512sum",
        "cksum",
        "tree",
        "seq",
        "sleep",
        "wait",
        "yes",
        "tac",
        "rev",
        "fold",
        "fmt",
        "expr",
        "bc",
        "history",
        "popd",
        "set",
        "unset",
        "read",
        ":",
        "shopt",
        "ulimit",
        "umask",
        "locale",
        "tty",
        "lsblk",
        "lscpu",
        "lsusb",
        "getent",
        "groups",
        "last",
        "w",
        "who",
        "shellcheck",
        "ruff",
        "mypy",
        "pylint",
        "flake8",
        "tsc",
        "nproc",
        "arch",
        "lsof",
        "cd",
        "pushd",
        "export",
        "declare",
        "typeset",
        "readonly",
        "local",
        "base64",
        "base32",
        "strings",
        "let",
        "return",
        "break",
        "continue",
        "exit",
        "shift",
        "getopts",
        "jobs",
        "fg",
        "bg",
        "disown",
        "times",
    ]
)
_SUBSCRIPT_CODE = re.compile(r"[A-Za-z_]\w*\[[^\]]*(\$\(|`)")
Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]


def classify_line(command: str, scope: Scope) -> tuple[list[Finding], str]:
    """Findings for every simple command in ``command`` (a whole line), and a parse error ('' if none)."""
    ctx = Ctx(scope, scope.workspace[0] if scope.workspace else None, 0, _script)
    parsed = parse_shell(command)
    if parsed.error:
        return [_cannot_read(parsed.error)], parsed.error
    out = []
    for cmd in parsed.commands:
        text = " ".join(cmd.argv)
        for f in classify_command(cmd, scope, ctx=ctx):
            out.append(Finding(f.key, f.axes, f.summary, f.reason, f.destination, text[:200]))
    return out, ""


def _cannot_read(error: str) -> Finding:
    return finding(
        "shell.opaque", "a command line the gate cannot read", "irreversible", reason=f"could not parse: {error}"
    )


def _script(text: str, ctx: Ctx) -> list[Finding]:
    parsed = parse_shell(text)
    if parsed.error:
        return [_cannot_read(parsed.error)]
    return [f for cmd in parsed.commands for f in classify_command(cmd, ctx.scope, ctx=ctx)]


def classify_command(cmd: SimpleCommand, scope: Scope, *, ctx: Ctx | None = None) -> list[Finding]:
    """Findings for one simple command (never empty for a command that runs something)."""
    ctx = ctx or Ctx(scope, scope.workspace[0] if scope.workspace else None, 0, _script)
    words, prefixes = unwrap(cmd.argv)
    shift = len(cmd.argv) - len(words)
    dynamic = {i - shift for i in cmd.dynamic if i >= shift}
    expanded = {i - shift for i in cmd.expanded if i >= shift}
    if "xargs" in prefixes and words:
        # The arguments xargs adds are only known at run time: appended, or put where -I's string stands.
        marker = xargs_replace(cmd.argv)
        marked = {i for i, w in enumerate(words) if marker and marker in w}
        dynamic |= marked
        expanded |= marked
        if not marker:
            dynamic.add(len(words))
            expanded.add(len(words))
            words.append("{xargs}")
    inner = SimpleCommand(tuple(words), cmd.redirects, cmd.piped_in, frozenset(dynamic), frozenset(expanded))
    out = _redirects(cmd, ctx) + assignments(cmd, prefixes, ctx)  # the shell opens these where it stands
    here = ctx
    for prefix in prefixes:
        if prefix.startswith("chdir:"):
            here = ctx.at(ctx.path(prefix[6:], "$" in prefix or "`" in prefix))  # env -C DIR, sudo -D DIR
    out += read_targets(
        [(w, i in expanded) for i, w in enumerate(words) if i], here, words[0] if words else "a command"
    )
    if cmd.in_substitution and words and _decodes(words):
        out.append(exec_finding(f"{words[0]} decodes hidden text into another command's words"))
    out += read_targets([(a.partition("=")[2], False) for a in cmd.assigns], ctx, "a variable")
    if any(_SUBSCRIPT_CODE.search(w) for i, w in enumerate(words) if i and i not in expanded):
        # bash evaluates array subscripts as arithmetic, running $(…) inside them ([[ -v 'a[$(…)]' ]], unset …).
        out.append(exec_finding("an array subscript that holds a command", "bash runs it when it reads the subscript"))
    if not words:
        out += _bare_prefixes(prefixes, cmd)
    else:
        out += _dispatch(words, inner, here)
        _follow_cd(words, inner, ctx)
    if "xargs" in prefixes:
        out = [_at_least(f, "recoverable") for f in out]
    if ROOT & set(prefixes):
        out = [_at_least(f, "recoverable", " (as root)") if f.axes.reversibility != "none" else f for f in out]
    return out


def _decodes(words: list[str]) -> bool:
    """Whether a command turns hidden text into plain text (base64 -d, xxd -r, rev, tr, printf '\\x..' …)."""
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name in ("base64", "base32", "basenc", "openssl"):
        return any(a in ("-d", "--decode", "-D") or a.startswith("-") and "d" in a[1:] and a[1] != "-" for a in args)
    if name in ("xxd",):
        return any(a.startswith("-r") or a == "-revert" for a in args)
    if name in ("printf",) or name == "echo" and any(a.startswith("-") and "e" in a for a in args):
        return any("\\x" in a or "\\0" in a or "\\u" in a for a in args)
    return name in ("rev", "tr", "uudecode", "zcat", "gunzip", "xzcat", "bzcat", "zstdcat")


def _bare_prefixes(prefixes: list[str], cmd: SimpleCommand) -> list[Finding]:
    if not prefixes:
        return []
    if ROOT & set(prefixes) and (cmd.piped_in or cmd.stdin_script or any(r.op == "<" for r in cmd.redirects)):
        return [exec_finding("a root shell reads commands from its input")]
    if "sudo" in prefixes and set(cmd.argv) & {"-s", "-i", "--shell", "--login"}:
        return [exec_finding("an interactive root shell")]
    return [finding("shell.read", " ".join(p for p in prefixes if ":" not in p))]


def _dispatch(words: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    head = words[0]
    name = head.rsplit("/", 1)[-1]
    if cmd.word_is_dynamic(0):
        return [
            finding(
                "shell.opaque",
                "run a command chosen at run time",
                "irreversible",
                reason="the command is not known until it runs",
            )
        ]
    out: list[Finding] = []
    if "/" in head and not ctx.system_binary(head):
        # Not the system's program of that name: it is whatever was put there.
        out.append(script_file(head, ctx, False, "run"))
    argv = [name, *words[1:]]
    special = _SPECIAL.get(name)
    if special is not None:
        return out + special(argv, cmd, ctx)
    rule = _RULES.get(name) or _by_prefix(name)
    if rule is not None:
        return out + rule(argv, cmd, ctx)
    if name in _READ_ONLY:
        return out + [finding("shell.read", name)]
    return out + _unknown(argv, cmd, ctx, named_by_path=bool(out))


_OUTPUT_OPTS = frozenset({"-o", "-out", "--out", "--output", "--output-file", "--outfile", "--output-dir", "-O"})


def _unknown(argv: list[str], cmd: SimpleCommand, ctx: Ctx, *, named_by_path: bool) -> list[Finding]:
    """A program the gate does not know: logged, unless it is handed code, writes outside, or wraps a command."""
    given_code = unknown_program(argv, cmd, ctx)
    if given_code:
        return given_code
    out: list[Finding] = []
    for i, a in enumerate(argv[1:], start=1):
        key, eq, value = a.partition("=")
        if key in _OUTPUT_OPTS and (eq or i + 1 < len(argv)):
            target = value if eq else argv[i + 1]
            out.append(
                write_target(target, ctx, f"{argv[0]} writes", expanded=cmd.word_is_expanded(i + (0 if eq else 1)))
            )
    rest = [(i, a) for i, a in enumerate(argv[1:], start=1) if not a.startswith("-")]
    if rest and (rest[0][1] in _RULES or rest[0][1] in _SPECIAL) and rest[0][1] not in _READ_ONLY:
        # An unknown wrapper (rlwrap, ssh-agent, prlimit …) may run the command that follows it: judge that too.
        first = rest[0][0]
        inner = SimpleCommand(
            tuple(argv[first:]),
            cmd.redirects,
            cmd.piped_in,
            frozenset(i - first for i in cmd.dynamic if i >= first),
            frozenset(i - first for i in cmd.expanded if i >= first),
        )
        out += _dispatch(list(inner.argv), inner, ctx)
    if out or named_by_path:
        return out
    return [finding("shell.unknown", f"run {argv[0]}", "recoverable", reason="a command the gate does not know")]


def _by_prefix(name: str) -> Rule | None:
    if is_python(name):
        return interpreter  # python3.12, pypy3 …
    if name.startswith("mkfs"):
        return _disk
    return None


def _redirects(cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    for r in cmd.redirects:
        if r.op in (">", ">>", ">|", "<>") or r.op == ">&" and not r.target.isdigit() and r.target != "-":
            if r.target.isdigit() and r.op != ">&":
                continue
            verb = "append to" if r.op == ">>" else "write"
            out.append(write_target(r.target, ctx, verb, expanded=r.expanded))
        elif r.op == "<" and r.target.startswith(("/dev/tcp/", "/dev/udp/")):
            out.append(write_target(r.target, ctx, "read from"))
        elif r.op == "<":
            out += read_targets([(r.target, r.expanded)], ctx, "input")
    return out


def _follow_cd(words: list[str], cmd: SimpleCommand, ctx: Ctx) -> None:
    name = words[0]
    if name not in ("cd", "pushd", "popd"):
        return
    args = [(i, w) for i, w in enumerate(words) if i and not w.startswith("-")]
    if name == "popd" or args[:1] == [(1, "-")]:
        ctx.cwd = None
    elif not args:
        ctx.cwd = ctx.path("~")
    else:
        ctx.cwd = ctx.path(args[0][1], cmd.word_is_expanded(args[0][0]))


def _at_least(f: Finding, level: str, suffix: str = "") -> Finding:
    return Finding(f.key, f.axes.at_least(reversibility=level), f.summary + suffix, f.reason, f.destination)


def _disk(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    return [
        finding(
            "disk.format", f"{argv[0]}: change a disk or partition", "irreversible", reason="erases what the disk held"
        )
    ]


def _mail(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    to = next((a for a in argv[1:] if "@" in a and not a.startswith("-")), "")
    return [
        finding(
            "mail.send",
            f"send mail{' to ' + to if to else ''}",
            "irreversible",
            "leaves",
            third_party="affects",
            reason="mail reaches another person and cannot be unsent",
            destination=to,
        )
    ]


def _eval(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if any(cmd.word_is_expanded(i) for i in range(1, len(argv))):
        return [exec_finding("eval of text made at run time", "the command is not known until it runs")]
    return shell_script(" ".join(argv[1:]), ctx, "eval") if len(argv) > 1 else [finding("shell.read", "eval")]


def _runs_string(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    """``watch``, ``su -c``, ``script -c``, ``flock -c``, ``trap``: a string that is a shell script."""
    name = argv[0]
    if name == "trap":
        if len(argv) < 3 or argv[1] in ("-", "-p", "-l", ""):
            return [finding("shell.read", "trap")]
        return (
            shell_script(argv[1], ctx, "trap")
            if not cmd.word_is_expanded(1)
            else [exec_finding("trap of text made at run time")]
        )
    if name == "watch":
        rest = [a for i, a in enumerate(argv) if i and not a.startswith("-") and argv[i - 1] not in ("-n", "-d")]
        return shell_script(" ".join(rest), ctx, "watch") if rest else [finding("shell.read", "watch")]
    for flag in ("-c", "--command"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return shell_script(argv[argv.index(flag) + 1], ctx, f"{name} -c")
    for a in argv[1:]:
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and argv.index(a) + 1 < len(argv):
            return shell_script(argv[argv.index(a) + 1], ctx, f"{name} {a}")
    if name in ("su", "runuser", "sg"):
        return [exec_finding(f"{name}: a shell as another user")]
    return [finding("exec.program", name, "recoverable")]


def _shell_builtin(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if name == "alias" and any("=" in a for a in argv[1:]):
        return [exec_finding("define an alias", "an alias changes what a later command runs")]
    if name == "hash" and "-p" in argv or name in ("enable", "complete", "bind") and len(argv) > 1:
        return [exec_finding(f"{name}: change what a command name runs", "it redirects later commands")]
    if name == "parallel":
        return [exec_finding("parallel runs commands built at run time")]
    return [finding("shell.read", name)]


_SPECIAL: dict[str, Rule] = {
    "eval": _eval,
    "alias": _shell_builtin,
    "hash": _shell_builtin,
    "enable": _shell_builtin,
    "complete": _shell_builtin,
    "bind": _shell_builtin,
    "parallel": _shell_builtin,
    **{n: _runs_string for n in ("trap", "watch", "su", "runuser", "sg", "script", "flock")},
}
_RULES: dict[str, Rule] = {
    **FILE_RULES,
    **EXEC_RULES,
    **PROGRAM_RULES,
    **NET_RULES,
    **SYSTEM_RULES,
    **{n: _disk for n in ("mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "blkdiscard", "cryptsetup")},
    **{n: _mail for n in ("mail", "mailx", "sendmail", "mutt", "neomutt", "msmtp", "swaks", "s-nail", "ssmtp")},
    "git": lambda a, c, x: classify_git(a, x.scope, ctx=x),
    "gh": lambda a, c, x: classify_gh(a, x.scope),
}
