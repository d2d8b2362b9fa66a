"""Commands that run code: shells, interpreters, ``awk``, ``sed``, editors, pagers, and unknown programs given code.

The rule is *fail closed*: code the gate cannot read asks. A shell's script
(``bash -lc '…'``, ``sh -s <<EOF``, ``bash <<< '…'``) is read and each of its
commands judged; a script produced at run time (``sh <(curl …)``,
``source <(…)``, ``cat x | python3 -``) asks. Inline interpreter code
(``python3 -c``, ``perl -e``, ``node -e``, ``ruby -e`` …) is only quiet when it
can reach nothing: no imports but a few harmless modules, none of the names that
open files, run programs or evaluate strings. A script file in the workspace is
the person's project code (run and logged); one outside it asks. An unknown
program handed code (``-c``/``-e``/``--eval``, a heredoc) asks.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from exo_core.gate.axes import Finding
from exo_core.gate.filecmd import exec_finding
from exo_core.gate.shell import SimpleCommand
from exo_core.gate.targets import Ctx, write_target
from exo_core.gate.vcs import finding

__all__ = [
    "EXEC_RULES",
    "INTERPRETERS",
    "SHELLS",
    "interpreter",
    "is_python",
    "script_file",
    "shell_script",
    "unknown_program",
]

Rule = Callable[[list[str], SimpleCommand, Ctx], list[Finding]]

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish", "rbash", "yash", "tcsh", "csh"})
_PYTHON = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|ipython3?)$")
INTERPRETERS: dict[str, tuple[str, ...]] = {
    # name -> options whose value is inline code
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "deno": ("eval",),
    "bun": ("-e", "--eval", "-p", "--print"),
    "ts-node": ("-e", "--eval", "-p", "--print"),
    "tsx": ("-e", "--eval", "-p", "--print"),
    "ruby": ("-e",),
    "jruby": ("-e",),
    "irb": (),
    "perl": ("-e", "-E"),
    "php": ("-r", "-B", "-R", "-E"),
    "lua": ("-e",),
    "luajit": ("-e",),
    "Rscript": ("-e", "--expr"),
    "R": ("-e",),
    "julia": ("-e", "--eval", "-E", "--print"),
    "tclsh": (),
    "wish": (),
    "expect": ("-c",),
    "gdb": ("-ex", "--eval-command", "-x", "--command", "-iex"),
    "lldb": ("-o", "--one-line", "-s", "--source"),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command", "-EncodedCommand", "-e"),
    "powershell": ("-c", "-Command", "-EncodedCommand"),
    "groovy": ("-e",),
    "scala": ("-e",),
    "elixir": ("-e", "--eval"),
    "erl": ("-eval",),
    "guile": ("-c",),
    "racket": ("-e",),
    "sbcl": ("--eval",),
    "swipl": ("-g",),
    "jshell": (),
    "dc": ("-e", "--expression"),
}
_INLINE_FLAGS = frozenset({"-c", "-e", "--eval", "--exec", "--execute", "--command", "-ex", "--expr", "--script"})
_VERSION = frozenset({"--version", "-V", "--help", "-h", "-v", "-version"})

# Python inline code is quiet only without these (a string never becomes code, a file is never opened).
_PY_DENIED = re.compile(
    r"__|\b(open|exec|eval|compile|getattr|setattr|delattr|globals|locals|vars|breakpoint|help|input|"
    r"modules|popen|system|spawn\w*|fork|remove|unlink|rmtree|rename|write_\w+|urlopen|socket)\b"
)
_PY_SAFE_MODULES = frozenset(
    [
        "sys",
        "json",
        "math",
        "platform",
        "re",
        "datetime",
        "time",
        "string",
        "random",
        "statistics",
        "itertools",
        "functools",
        "collections",
        "decimal",
        "fractions",
        "textwrap",
        "base64",
        "hashlib",
        "uuid",
        "unicodedata",
        "calendar",
        "pprint",
        "operator",
        "keyword",
    ]
)
_JS_DENIED = re.compile(
    r"\b(require|import|process|child_process|eval|Function|constructor|globalThis|global|module|fs|Deno|Bun|"
    r"fetch|XMLHttpRequest|WebSocket|this|prototype|__proto__)\b|`|\[\s*[^\]\d\s,]"
)
# Other languages (perl, ruby, php, lua …): quiet only when every name is one of these.
_PLAIN_WORDS = frozenset(
    [
        "print",
        "say",
        "puts",
        "p",
        "echo",
        "printf",
        "length",
        "join",
        "split",
        "sort",
        "reverse",
        "uc",
        "lc",
        "abs",
        "int",
        "sqrt",
        "sum",
        "my",
        "for",
        "foreach",
        "if",
        "else",
        "while",
        "and",
        "or",
        "not",
        "x",
        "y",
        "i",
        "n",
        "a",
        "b",
        "s",
        "e",
        "q",
        "qw",
        "to_s",
        "to_i",
        "upcase",
        "downcase",
        "size",
        "each",
        "map",
        "local",
        "end",
        "do",
        "then",
        "lc",
        "uc",
    ]
)


def _inline_harmless(lang: str, code: str) -> bool:
    if _PYTHON.match(lang):
        if _PY_DENIED.search(code):
            return False
        modules = re.findall(r"\bimport\s+([\w., ]+)|\bfrom\s+(\w+)", code)
        names = {m.strip() for pair in modules for group in pair for m in group.split(",") if m.strip()}
        return all(name.split(" ")[0].split(".")[0] in _PY_SAFE_MODULES for name in names)
    if lang in ("node", "nodejs", "bun", "deno", "ts-node", "tsx"):
        return not _JS_DENIED.search(code)
    if lang in ("perl", "ruby", "php", "lua", "luajit", "jruby"):
        stripped = re.sub(r"'[^']*'", "''", code)
        if any(mark in stripped for mark in ("`", "%x", "qx", "<", ">", "|")):
            return False
        return all(word in _PLAIN_WORDS for word in re.findall(r"[A-Za-z_]\w*", stripped))
    return False


def inline_finding(lang: str, code: str, what: str) -> Finding:
    """Inline code: logged when it can reach nothing (see the module docstring), else irreversible (asks)."""
    if _inline_harmless(lang, code):
        return finding("exec.inline", f"run inline {lang} code", "reversible", reason="it reaches no file or program")
    return finding(
        "exec.inline",
        f"run {what} {lang} code that can reach files, programs or the network",
        "irreversible",
        reason="inline code with effects the gate cannot follow",
    )


def opaque(what: str) -> Finding:
    """Code produced at run time: irreversible, so it asks."""
    return finding(
        "shell.opaque",
        what,
        "irreversible",
        reason="the code it runs is produced at run time and cannot be checked",
    )


def script_file(word: str, ctx: Ctx, expanded: bool, runner: str) -> Finding:
    """Running the script file ``word``: project code in the workspace (logged), asked about anywhere else."""
    if expanded or word.startswith(("<(", ">(")):
        return opaque(f"{runner} runs a script produced at run time")
    if ctx.path(word) in ctx.written:
        return opaque(f"{runner} runs {word}, which this same line writes")
    if ctx.inside(word):
        return finding("exec.program", f"{runner} {word}", "recoverable", reason="runs a program in the workspace")
    return finding(
        "exec.program.outside",
        f"{runner} {word} (a program from outside the workspace)",
        "irreversible",
        reason="a program outside the workspace may have been put there to be run",
    )


def shell_script(text: str, ctx: Ctx, what: str) -> list[Finding]:
    """The findings of the commands in ``text``, a script a command runs (opaque past the depth limit)."""
    if ctx.script is None or ctx.depth >= 8:
        return [opaque(f"{what}: nested too deep")]
    return ctx.script(text, ctx.child())


def stdin_source(cmd: SimpleCommand) -> tuple[str, str]:
    """Where a command's standard input comes from: ('script', body), ('file', path), ('pipe', ''), ('', '')."""
    if cmd.stdin_script:
        return "script", cmd.stdin_script
    for r in cmd.redirects:
        if r.op == "<" and r.target not in ("/dev/null",):
            return "file", r.target
    return ("pipe", "") if cmd.piped_in else ("", "")


def _shell(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    inline, script_at = False, 0
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if a == "--" or a == "-":
            i += 1
            break
        if a.startswith("--"):
            i += 1
            continue
        if a[:1] in "-+" and len(a) > 1:
            inline = inline or "c" in a[1:]
            i += 1
            continue
        break
    script_at = i
    if inline:
        if script_at >= len(argv):
            return [opaque(f"{name} -c without a script")]
        if cmd.word_is_expanded(script_at):
            return [opaque(f"{name} -c runs a script made at run time")]
        return shell_script(argv[script_at], ctx, f"{name} -c")
    if script_at < len(argv):
        return [script_file(argv[script_at], ctx, cmd.word_is_expanded(script_at), name)]
    source, body = stdin_source(cmd)
    if source == "script":
        return shell_script(body, ctx, f"{name} <<heredoc")
    if source == "file":
        return [script_file(body, ctx, False, name)]
    return [opaque(f"{name} runs commands from its input")]


def _source(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    if len(argv) < 2:
        return [opaque(f"{argv[0]} without a file")]
    return [script_file(argv[1], ctx, cmd.word_is_expanded(1), argv[0])]


def _interpreter(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    name = argv[0]
    if len(argv) == 2 and argv[1] in _VERSION:
        return [finding("shell.read", f"{name} {argv[1]}")]
    python = bool(_PYTHON.match(name))
    code_flags = ("-c",) if python else INTERPRETERS.get(name, ())
    out: list[Finding] = []
    perl_in_place = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if name == "perl" and a.startswith("-") and not a.startswith("--") and "i" in a[1:]:
            perl_in_place = True
        if python and a in ("-W", "-X") or name in ("node", "nodejs") and a in ("--input-type", "--stack-size"):
            i += 2
            continue
        if name == "php" and a == "-S" and i + 1 < len(argv):
            return out + [_php_server(argv[i + 1], ctx)]
        if python and a == "-m" and i + 1 < len(argv):
            return out + _python_module(argv[i + 1 :], ctx)
        if a in code_flags or python and a.startswith("-") and not a.startswith("--") and a.endswith("c"):
            code = argv[i + 1] if i + 1 < len(argv) else ""
            if perl_in_place:
                out += _perl_in_place(argv[i + 2 :], cmd, ctx, i + 2)
            expanded = cmd.word_is_expanded(i + 1)
            return out + [
                opaque(f"{name} runs code made at run time") if expanded else inline_finding(name, code, "inline")
            ]
        if name == "perl" and a.startswith("-") and not a.startswith("--") and "e" in a[1:].lower():
            code = argv[i + 1] if i + 1 < len(argv) else ""
            if perl_in_place:
                out += _perl_in_place(argv[i + 2 :], cmd, ctx, i + 2)
            return out + [inline_finding(name, code, "inline")]
        if a.startswith(("-r", "--require", "--import", "-M", "-l")) and name not in ("php", "ruby", "perl"):
            return out + [exec_finding(f"{name} {a}: loads code first")]
        if name in ("ruby", "perl") and a.startswith(("-r", "-M", "-I")) and ("/" in a or a in ("-r", "-M", "-I")):
            return out + [exec_finding(f"{name} {a}: loads code from a file first")]
        if name in ("deno", "bun") and a in ("run", "x", "test", "install", "exec", "serve", "task"):
            i += 1
            continue
        if not a.startswith("-") and "://" in a:
            return out + [opaque(f"{name} runs code fetched from {a}")]
        if not a.startswith("-") and a != "-":
            return out + [script_file(a, ctx, cmd.word_is_expanded(i), name)]
        elif a == "-":
            break
        i += 1
    source, body = stdin_source(cmd)
    if source == "script":
        return out + [inline_finding(name, body, "heredoc")]
    if source == "file":
        return out + [script_file(body, ctx, False, name)]
    if out:
        return out
    return [opaque(f"{name} runs code from its input")]


def _perl_in_place(rest: list[str], cmd: SimpleCommand, ctx: Ctx, start: int) -> list[Finding]:
    files = [(start + k, a) for k, a in enumerate(rest) if not a.startswith("-")]
    return [write_target(a, ctx, "perl -i", expanded=cmd.word_is_expanded(k)) for k, a in files]


_SERVERS = frozenset({"http.server", "SimpleHTTPServer", "smtpd", "aiosmtpd", "pydoc", "ftplib", "xmlrpc.server"})


def _python_module(rest: list[str], ctx: Ctx) -> list[Finding]:
    module = rest[0]
    if module in _SERVERS:
        local = any(b in rest for b in ("127.0.0.1", "localhost", "::1"))
        if local:
            return [finding("net.listen", f"serve with python -m {module} on this machine", "recoverable")]
        return [
            finding(
                "net.listen",
                f"serve files to the network with python -m {module}",
                "recoverable",
                "leaves",
                reason="anyone on the network can read what it serves",
            )
        ]
    return shell_script(shlex.join(rest), ctx, "python -m")


def _php_server(address: str, ctx: Ctx) -> Finding:
    host = address.rsplit(":", 1)[0]
    if ctx.scope.local_host(host) and host.strip("[]") not in ("0.0.0.0", "::", ""):
        return finding("net.listen", f"serve with php -S on {address}", "recoverable")
    return finding(
        "net.listen",
        f"serve files to the network with php -S {address}",
        "recoverable",
        "leaves",
        reason="anyone on the network can read what it serves",
    )


def unknown_program(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding] | None:
    """Findings for an unknown program handed code (fail closed), or ``None`` when it is given none."""
    if any(a in _INLINE_FLAGS for a in argv[1:]):
        return [exec_finding(f"{argv[0]} is given code to run", "an unknown program handed code fails closed")]
    if cmd.stdin_script:
        return [exec_finding(f"{argv[0]} reads a script from a heredoc", "an unknown program handed code fails closed")]
    return None


EXEC_RULES: dict[str, Rule] = {
    **{n: _shell for n in SHELLS},
    **{n: _interpreter for n in INTERPRETERS},
    "source": _source,
    ".": _source,
}


def is_python(name: str) -> bool:
    """Whether ``name`` is a Python interpreter (``python3.12``, ``pypy3`` …)."""
    return bool(_PYTHON.match(name))


def interpreter(argv: list[str], cmd: SimpleCommand, ctx: Ctx) -> list[Finding]:
    """The rule for an interpreter (``python3.12``, ``node``, ``perl`` …): inline code, a module, a script, stdin."""
    return _interpreter(argv, cmd, ctx)
