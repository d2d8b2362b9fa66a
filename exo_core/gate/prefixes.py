"""Prefixes that run another command (``sudo``, ``env``, ``timeout``, ``xargs`` …) and the variables set for one.

:func:`unwrap` strips the prefixes off a command and says which it saw (with
``env:NAME=value`` for variables and ``chdir:DIR`` for ``env -C``/``sudo -D``);
:func:`assignments` judges variables that make the next program load or run
something else (``LD_PRELOAD``, ``BASH_ENV``, ``GIT_SSH_COMMAND`` …) or point it at
folders outside the workspace (``PATH``, ``PYTHONPATH`` …). See docs/gate.md,
"Shell commands".
"""

from __future__ import annotations

import re
import shlex

from exo_core.gate.axes import Finding
from exo_core.gate.filecmd import exec_finding
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx

__all__ = ["ROOT", "assignments", "unwrap", "xargs_replace"]

_PREFIX_OPTS_WITH_ARG: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group"},
    "doas": {"-u", "-C"},
    "pkexec": {"--user"},
    "run0": {"--user", "-u"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "chrt": set(),
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {"-n", "-I", "-P", "-d", "-L", "-s", "-E", "-a", "--arg-file", "--delimiter", "--max-args"},
    "taskset": set(),
    "nohup": set(),
    "time": {"-f", "-o", "--format", "--output"},
    "command": set(),
    "exec": {"-a"},
    "builtin": set(),
    "coproc": set(),
    "chronic": set(),
    "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "setsid": set(),
    "caffeinate": set(),
    "unbuffer": set(),
    "torsocks": set(),
    "torify": set(),
    "proxychains": {"-f"},
    "proxychains4": {"-f"},
    "busybox": set(),
    "toybox": set(),
    "chroot": {"--userspec", "--groups"},
    "unshare": set(),
    "nsenter": {"-t", "--target"},
    "strace": {"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-O", "-S", "-a", "-b", "-X"},
    "ltrace": {"-o", "-e", "-p", "-s", "-u", "-n", "-a"},
    "valgrind": set(),
    "fakeroot": set(),
    "firejail": set(),
    "xvfb-run": {"-a", "-n", "-s", "-f", "-e"},
    "dbus-run-session": set(),
    "catchsegv": set(),
    "numactl": set(),
    "cpulimit": {"-l", "-p", "-e"},
    "trickle": {"-u", "-d"},
    "rlwrap": set(),
    "prlimit": {"-p", "--pid"},
    "setarch": set(),
    "linux32": set(),
    "linux64": set(),
    "ssh-agent": set(),
    "dbus-launch": set(),
}
_TAKES_POSITIONAL = {"timeout": 1, "taskset": 1, "chroot": 1, "chrt": 1, "flock": 1, "setarch": 1}
ROOT = frozenset({"sudo", "doas", "pkexec", "run0", "su", "runuser"})
_CHDIR = frozenset({("env", "-C"), ("env", "--chdir"), ("sudo", "-D"), ("sudo", "--chdir")})
_TAKES_ASSIGNMENTS = frozenset({"env", "sudo", "doas", "run0"})  # `sudo LD_PRELOAD=x cmd` sets it for cmd
# Variables that make the next program load or run something else.
_EXEC_VARS = frozenset(
    [
        "LD_PRELOAD",
        "LD_AUDIT",
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "PS0",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "IFS",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_PAGER",
        "PAGER",
        "MANPAGER",
        "GIT_EDITOR",
        "EDITOR",
        "VISUAL",
        "SUDO_EDITOR",
        "GIT_EXTERNAL_DIFF",
        "GIT_EXEC_PATH",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_TEMPLATE_DIR",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5OPT",
        "RUBYOPT",
        "NODE_OPTIONS",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
        "GCONV_PATH",
    ]
)
_PATH_VARS = frozenset(
    [
        "PATH",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "NODE_PATH",
        "PERL5LIB",
        "PERLLIB",
        "RUBYLIB",
        "HOME",
        "XDG_CONFIG_HOME",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "CDPATH",
    ]
)
_HARMLESS_PAGERS = frozenset({"", "cat", "less", "more", "true", "false", ":", "less -R", "less -FRX", "head"})

_SSH_RISK = re.compile(r"proxycommand|localcommand|knownhostscommand|-F|include|match", re.IGNORECASE)


def unwrap(argv: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without the prefixes that run another command; returns (command, prefixes seen)."""
    words = list(argv)
    prefixes: list[str] = []
    while words:
        name = words[0].rsplit("/", 1)[-1]
        if name not in _PREFIX_OPTS_WITH_ARG:
            break
        if name == "command" and words[1:2] in (["-v"], ["-V"]):
            return ["type", *words[2:]], prefixes
        prefixes.append(name)
        words.pop(0)
        with_arg = _PREFIX_OPTS_WITH_ARG[name]
        while words and (words[0].startswith("-") or name in _TAKES_ASSIGNMENTS and _is_assignment(words[0])):
            opt = words.pop(0)
            if opt == "--":
                break
            if name in _TAKES_ASSIGNMENTS and not opt.startswith("-"):
                prefixes.append("env:" + opt)
            elif name == "env" and (opt in ("-S", "--split-string") or opt.startswith("--split-string=")):
                if "=" in opt:
                    text = opt.split("=", 1)[1]
                elif words:
                    text = words.pop(0)
                else:
                    text = ""
                words = [*split_words(text), *words]
            elif opt in with_arg and words:
                value = words.pop(0)
                if (name, opt) in _CHDIR:
                    prefixes.append("chdir:" + value)
            elif opt.startswith("--chdir="):
                prefixes.append("chdir:" + opt.split("=", 1)[1])
        for _ in range(_TAKES_POSITIONAL.get(name, 0)):
            if words:
                words.pop(0)
        if name == "flock" and words[:1] in (["-c"], ["--command"]):
            words = ["sh", "-c", *words[1:]]  # flock FILE -c SCRIPT runs SCRIPT with sh -c
    return words, prefixes


def xargs_replace(argv: tuple[str, ...]) -> str:
    """The string ``xargs -I`` replaces with its input ('' when it appends instead)."""
    for i, a in enumerate(argv):
        if a == "-I" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("-I") and len(a) > 2:
            return a[2:]
        if a in ("-i", "--replace"):
            return "{}"
        if a.startswith(("--replace=", "-i")):
            return a.split("=", 1)[1] if "=" in a else a[2:]
    return ""


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and (name[0].isalpha() or name[0] == "_") and name.replace("_", "a").isalnum()


def split_words(text: str) -> list[str]:
    """``text`` split into words as a shell would (one word when its quotes do not close)."""
    try:
        return shlex.split(text)
    except ValueError:
        return [text]


def assignments(cmd: SimpleCommand, prefixes: list[str], ctx: Ctx) -> list[Finding]:
    """Findings for the variables set for ``cmd`` (its own ``A=1``, ``env A=1``, ``sudo A=1``, ``export A=1``)."""
    pairs = [(a, i in cmd.expanded_assigns) for i, a in enumerate(cmd.assigns)]
    pairs += [(p[4:], False) for p in prefixes if p.startswith("env:")]
    if cmd.argv and cmd.argv[0] in ("export", "declare", "typeset", "readonly", "local"):
        pairs += [(a, cmd.word_is_expanded(i)) for i, a in enumerate(cmd.argv) if i and "=" in a]
    out: list[Finding] = []
    for text, expanded in pairs:
        name, _, value = text.partition("=")
        name = name.rstrip("+")
        risky = ""
        if name in _EXEC_VARS or name.startswith(("LD_", "DYLD_", "BASH_FUNC_")):
            if not _harmless_program(name, value):
                risky = f"{name} makes programs run or load other code"
        elif name in _PATH_VARS:
            entries = [e for e in value.split(":") if e and e not in (f"${name}", "${" + name + "}")]
            if any(not ctx.inside(e, expanded) for e in entries):
                risky = f"{name} points programs at folders outside the workspace"
        elif not expanded and ("$(" in value or "`" in value):
            risky = f"{name} holds code that arithmetic or eval would run"
        if risky:
            out.append(exec_finding(f"set {name}", risky))
    return out


def _harmless_program(name: str, value: str) -> bool:
    """``GIT_PAGER=cat``, ``EDITOR=true``, ``GIT_SSH_COMMAND='ssh -i key'``: a known program, no tricks."""
    if name in ("PAGER", "GIT_PAGER", "MANPAGER", "EDITOR", "GIT_EDITOR", "VISUAL"):
        return value in _HARMLESS_PAGERS
    if name in ("GIT_SSH_COMMAND", "GIT_SSH"):
        words = split_words(value)
        plain = not any(ch in value for ch in ";|&$`<>")
        return plain and words[:1] == ["ssh"] and not _SSH_RISK.search(value)
    return False
