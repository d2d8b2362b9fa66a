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
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.gate.axes import Finding
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
                value = os.path.expanduser("~")
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
    for root in scope.workspace:
        real = Path(os.path.realpath(root))
        if path == real or real in path.parents:
            return True
    return False


def is_secret(path: Path, scope: Scope, *, pattern: bool = False) -> bool:
    """Whether ``path`` (or, with ``pattern``, a glob) names a secret file outside the workspace."""
    if not pattern and shell_inside(path, scope):
        return False
    home = Path(os.path.expanduser("~"))
    homes = [home]
    exo_home = os.environ.get("EXO_HOME")
    if exo_home:
        homes.append(Path(os.path.expanduser(exo_home)).parent)
    text = str(path)
    if pattern:
        samples = [str(h / s / "id_rsa") for h in homes for s in _HOME_SECRETS] + [
            s.replace("*", "x") for s in _SYSTEM_SECRETS
        ]
        samples += [str(home / ".ssh" / n.replace("*", "x")) for n in _SECRET_NAMES]
        return any(fnmatch.fnmatchcase(sample, text) for sample in samples)
    if any(fnmatch.fnmatchcase(path.name, n) for n in _NOT_SECRET):
        return False
    for system in _SYSTEM_SECRETS:
        if fnmatch.fnmatchcase(text, system) or fnmatch.fnmatchcase(text, system + "/*"):
            return True
    for h in homes:
        for secret in _HOME_SECRETS:
            where = h / secret
            if path == where or where in path.parents:
                return True
    if exo_home:
        exo = Path(os.path.realpath(os.path.expanduser(exo_home)))
        if any(path == exo / part or exo / part in path.parents for part in ("keys", "token", "run")):
            return True
    return any(fnmatch.fnmatchcase(path.name, n) for n in _SECRET_NAMES)


def exo_protected(path: Path, *, writing: bool) -> str:
    """Why ``path`` is exod's own and off limits to the shell ('' when it is not).

    The Exo home's keys, token, sockets and sessions database, any ledger key file, and (for a write)
    anything in the home: its gate.toml and config decide what the agent may do. The homes are
    ``~/.exo`` and ``$EXO_HOME``. A ``file.protected`` finding is denied under every policy
    (:data:`exo_core.gate.floor.PROTECTED_KEYS`); the file tools use the same key.
    """
    if path.name == _LEDGER_KEY:
        return "a ledger signing key"
    homes = [Path(os.path.expanduser("~/.exo"))]
    exo_home = os.environ.get("EXO_HOME")
    if exo_home:
        homes.append(Path(os.path.expanduser(exo_home)))
    for home in dict.fromkeys(Path(os.path.realpath(h)) for h in homes):
        if path != home and home not in path.parents:
            continue
        rel = path.relative_to(home)
        if rel.parts and rel.parts[0] in ("keys", "run") or rel.name.startswith(("token", "sessions.sqlite")):
            return "the Exo home's keys, token, sockets or sessions"
        if writing:
            return "the Exo home: exod's own policy, settings and plugins"
    return ""


def _protected(what: str, path: Path, why: str) -> Finding:
    return finding("file.protected", f"{what} exod's own file {path}", "irreversible", reason=why)


def read_targets(words: list[tuple[str, bool]], ctx: Ctx, what: str) -> list[Finding]:
    """A ``file.protected`` or ``secret.read`` finding when any of ``words`` (text, expanded) names one."""
    for word, expanded in words:
        for candidate in _candidates(word):
            path = ctx.path(candidate, expanded) if not any(ch in candidate for ch in "*?") else None
            why = exo_protected(path, writing=False) if path is not None else ""
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
    why = exo_protected(path, writing=True)
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
