"""Where a shell command's paths land: the workspace or not, a secret or not, judged by realpath.

The shell side of the gate judges the paths a command names here (the file
tools keep :meth:`Scope.inside`). Three things differ from the file tools:

* paths are resolved with ``realpath``: a symlink already on disk that points
  out of the workspace is outside (``ln -s ~ home`` is itself asked about,
  since a link made earlier in the same line is not on disk yet);
* ``/tmp`` and ``/var/tmp`` are outside the workspace: they are shared with
  every other program and user, and a common place to stage an attack;
* a line's ``cd`` is followed (``cd ~ && echo x >> .bashrc`` writes to the
  home folder); after a ``cd`` to a place decided at run time every relative
  path is unknown, and unknown is outside.

A word whose text comes from an expansion (``$X``, ``$(…)``, ``{a,b}``) names
no known path, except ``$PWD`` and ``$HOME``, which are substituted.
Secret files (private keys, cloud credentials, the Exo home's keys and token,
``/etc/shadow`` …) are recognised wherever a word names them, globs included.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.gate.axes import Finding
from exo_core.gate.paths import protected
from exo_core.gate.scope import Scope
from exo_core.gate.vcs import finding

__all__ = ["HARMLESS_DEVICES", "Ctx", "is_secret", "read_targets", "shell_inside", "write_target"]

HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
_SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_*_key", "/proc/*/environ")
_HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".config/gh",
    ".config/gcloud",
    ".config/exo/tokens",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".exo/keys",
    ".exo/token",
    ".exo/run",
)
_SECRET_NAMES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore")
_NOT_SECRET = ("*.pub", "known_hosts", "known_hosts.old")
_LEDGER_KEY = "ledger-ed25519.key"  # exo_core.ledger.keys.KEY_FILE_NAME (not imported: the ledger loads nacl)
_SECRET_HINT = re.compile(r"\.ssh|id_(rsa|dsa|ecdsa|ed25519)|\.gnupg|\.aws|shadow|\.netrc|credentials|\.exo\b|\.kube")
_SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin")


@dataclass(slots=True)
class Ctx:
    """What the classifier knows while it reads one command line: the scope, the current folder, the depth.

    ``cwd`` is ``None`` once a ``cd`` went somewhere decided at run time. ``script`` classifies a nested
    script (``bash -c``, ``eval``, ``find -exec sh -c``); it is set by :mod:`exo_core.gate.commands`.
    """

    scope: Scope
    cwd: Path | None = None
    depth: int = 0
    script: Callable[[str, Ctx], list[Finding]] | None = field(default=None, repr=False)
    written: set[Path] = field(default_factory=set)  # files this line writes (running one later asks)

    def child(self) -> Ctx:
        """The context of a script this line runs (one level deeper, same folder)."""
        return Ctx(self.scope, self.cwd, self.depth + 1, self.script, self.written)

    def at(self, cwd: Path | None) -> Ctx:
        """This context for one command run in another folder (``env -C DIR``); ``None``: unknown."""
        return Ctx(self.scope, cwd, self.depth, self.script, self.written)

    def path(self, word: str, expanded: bool = False) -> Path | None:
        """The real path ``word`` names, or ``None`` when it is decided at run time."""
        text = word
        for name in ("PWD", "HOME"):
            value = str(self.cwd) if name == "PWD" and self.cwd is not None else ""
            if name == "HOME":
                value = str(_places().home)
            if value:
                text = text.replace("${" + name + "}", value).replace("$" + name, value)
        if self.cwd is not None:
            text = text.replace("$(pwd)", str(self.cwd))
        if expanded and any(mark in text for mark in ("$", "`", "<(", ">(", "{")):
            return None
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            if self.cwd is None:
                return None
            path = self.cwd / path
        return Path(os.path.realpath(path))

    def inside(self, word: str, expanded: bool = False) -> bool:
        """Whether ``word`` names a path in the workspace (realpath; /tmp is outside; unknown is outside)."""
        path = self.path(word, expanded)
        return path is not None and shell_inside(path, self.scope)

    def write_target(self, word: str, verb: str) -> Finding:
        """A command changing ``word`` (see :func:`write_target`); for rules that cannot import this module."""
        return write_target(word, self, verb)

    def system_binary(self, word: str) -> bool:
        """Whether a command named by its path lives in a system folder (so its name says what it is)."""
        parent = os.path.dirname(os.path.normpath(word))
        return parent in _SYSTEM_BIN


def shell_inside(path: Path, scope: Scope) -> bool:
    """Whether the real ``path`` lies in one of the scope's workspace roots (their real paths)."""
    text = str(path)
    return any(_under(text, root) for root in _real_roots(scope.workspace))


def _under(text: str, root: str) -> bool:
    # String prefixes: Path.parents builds a Path per level, and this runs for every word of every line.
    return text == root or text.startswith(root if root.endswith("/") else root + "/")


@functools.lru_cache(maxsize=64)
def _real_roots(roots: tuple[Path, ...]) -> tuple[str, ...]:
    # A workspace root is resolved once per process: it is the folder exod was started in.
    return tuple(os.path.realpath(root) for root in roots)


@dataclass(frozen=True, slots=True)
class _Places:
    """The person's home and the places under it that hold secrets (computed once per HOME/EXO_HOME)."""

    home: Path
    secrets: tuple[str, ...]
    exo_homes: tuple[str, ...]
    samples: tuple[str, ...]  # concrete secret paths a glob is tried against


@functools.lru_cache(maxsize=4)
def _places_for(home_env: str | None, exo_env: str | None) -> _Places:
    home = Path(os.path.expanduser("~"))
    secrets = tuple(str(home / s) for s in _HOME_SECRETS)
    exo = [os.path.realpath(home / ".exo")]
    if exo_env:
        exo.append(os.path.realpath(os.path.expanduser(exo_env)))
    samples = [p + "/id_rsa" for p in secrets] + [s.replace("*", "x") for s in _SYSTEM_SECRETS]
    samples += [str(home / ".ssh" / n.replace("*", "x")) for n in _SECRET_NAMES]
    samples += [f"{e}/{part}/x" for e in exo for part in ("keys", "run")] + [f"{e}/token" for e in exo]
    return _Places(home, secrets, tuple(dict.fromkeys(exo)), tuple(samples))


def _places() -> _Places:
    return _places_for(os.environ.get("HOME"), os.environ.get("EXO_HOME"))


def is_secret(path: Path, scope: Scope, *, pattern: bool = False) -> bool:
    """Whether ``path`` (or, with ``pattern``, a glob) names a secret file outside the workspace."""
    places = _places()
    text = str(path)
    if pattern:
        return any(fnmatch.fnmatchcase(sample, text) for sample in places.samples)
    if shell_inside(path, scope):
        return False
    if any(fnmatch.fnmatchcase(path.name, n) for n in _NOT_SECRET):
        return False
    for system in _SYSTEM_SECRETS:
        if fnmatch.fnmatchcase(text, system) or fnmatch.fnmatchcase(text, system + "/*"):
            return True
    if any(_under(text, where) for where in places.secrets):
        return True
    return any(fnmatch.fnmatchcase(path.name, n) for n in _SECRET_NAMES)


def exo_protected(path: Path, scope: Scope, *, writing: bool) -> str:
    """Why ``path`` is exod's own and off limits to the shell ('' when it is not).

    The same judgement as the file tools' (:func:`exo_core.gate.paths.protected`): the Exo home's
    keys, token, sockets and sessions database, any ledger key file, a store's private files, and (for
    a change) anything else in the home but a workspace or store inside it. A scope that names no home
    (``exo gate check`` names one; a bare ``Policy()`` does not) is judged against ``$EXO_HOME`` or
    ``~/.exo``. A ``file.protected`` finding is denied under every policy (``ALWAYS_DENIED``).
    """
    guarded = scope if scope.exo_home is not None else _with_default_home(scope, os.environ.get("EXO_HOME"))
    text = str(path)
    if path.name != _LEDGER_KEY and not any(_under(text, root) for root in _exo_roots(guarded)):
        return ""  # the common case, answered without the file tools' fuller judgement
    return protected(path, guarded, writing=writing)


@functools.lru_cache(maxsize=16)
def _exo_roots(scope: Scope) -> tuple[str, ...]:
    roots = [r for r in (scope.exo_home, *scope.stores) if r is not None]
    return tuple(dict.fromkeys(form for r in roots for form in (str(r), os.path.realpath(r))))


@functools.lru_cache(maxsize=16)
def _with_default_home(scope: Scope, exo_env: str | None) -> Scope:
    home = Path(os.path.expanduser(exo_env)) if exo_env else _places().home / ".exo"
    return scope.with_exo(home, (home / "store",))


def _protected(what: str, path: Path, why: str) -> Finding:
    return finding("file.protected", f"{what} exod's own file {path}", "irreversible", reason=why)


def read_targets(words: list[tuple[str, bool]], ctx: Ctx, what: str) -> list[Finding]:
    """A ``file.protected`` or ``secret.read`` finding when any of ``words`` (text, expanded) names one."""
    for word, expanded in words:
        if word.startswith("-") and "=" not in word:
            continue  # an option, not a path
        if expanded and _SECRET_HINT.search(word):
            # ${HOME}/.ss${X}h/id_rsa: the whole path is only known at run time, but its pieces say what it is.
            return [finding("secret.read", f"{what} reads {word}", "irreversible", reason="names a secret file")]
        for candidate in _candidates(word):
            path = ctx.path(candidate, expanded) if not any(ch in candidate for ch in "*?") else None
            why = exo_protected(path, ctx.scope, writing=False) if path is not None else ""
            if path is not None and why:
                return [_protected(f"{what} reads", path, why)]
            if _names_secret(candidate, expanded, ctx):
                return [
                    finding(
                        "secret.read",
                        f"{what} reads {candidate}",
                        "irreversible",
                        reason="a secret read into the conversation cannot be taken back; it may reach the ledger",
                    )
                ]
    return []


def _candidates(word: str) -> list[str]:
    out = [word]
    if word.startswith("file://"):
        out.append(word[7:])
    for mark in ("=", "@"):
        if mark in word:
            out.append(word.split(mark, 1)[1])
    return [c for c in out if c]


def _names_secret(word: str, expanded: bool, ctx: Ctx) -> bool:
    globbed = any(ch in word for ch in "*?")
    # Glob characters are kept through realpath as private-use characters, then put back.
    path = ctx.path(word.replace("*", "\ue000").replace("?", "\ue001"), expanded)
    if path is None:
        return False
    text = str(path).replace("\ue000", "*").replace("\ue001", "?")
    return is_secret(Path(text), ctx.scope, pattern=globbed)


def write_target(word: str, ctx: Ctx, verb: str, *, expanded: bool = False) -> Finding:
    """A shell command changing the file ``word``: reversible in the workspace, irreversible anywhere else."""
    if word in HARMLESS_DEVICES or word.startswith("/dev/fd/"):
        return finding("shell.read", f"{verb} {word}")
    if word.startswith(("/dev/tcp/", "/dev/udp/")):
        host = word.split("/")[3] if word.count("/") >= 3 else ""
        return finding(
            "net.send",
            f"{verb} a network connection to {host}",
            "irreversible",
            "leaves",
            reason="bash opens a network connection for /dev/tcp and /dev/udp",
            destination=host,
        )
    if word.startswith("/dev/"):
        return finding("disk.write", f"{verb} the device {word}", "irreversible", reason="writes a raw device")
    path = ctx.path(word, expanded)
    if path is None:
        return finding(
            "file.write.outside",
            f"{verb} {word} (a path decided at run time)",
            "irreversible",
            reason="the path is only known when the command runs, so it may be outside the workspace",
        )
    why = exo_protected(path, ctx.scope, writing=True)
    if why:
        return _protected(verb, path, why)
    if shell_inside(path, ctx.scope):
        parts = path.parts
        if ".git" in parts and parts[parts.index(".git") + 1 : parts.index(".git") + 2] in (("hooks",), ("config",)):
            return finding(
                "vcs.hook",
                f"{verb} {word} (git runs it later)",
                "irreversible",
                reason="git hooks and config run programs on the next git command",
            )
        ctx.written.add(path)
        return finding("file.write", f"{verb} {word}", "reversible", reason="inside the workspace")
    return finding(
        "file.write.outside",
        f"{verb} {word} (outside the workspace)",
        "irreversible",
        reason="outside the workspace, where nothing keeps the old content",
    )
