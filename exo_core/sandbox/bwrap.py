"""The OS sandbox every tool process runs in: bubblewrap, with a clean environment and resource limits.

A command sees:

* the system read-only (``/`` bound read-only, the person's home folder
  included: the gate asks before credentials there are read), with empty
  private ``/tmp``, ``/var/tmp`` and ``/run`` (other programs' sockets: the
  Docker daemon's, D-Bus, agents);
* the workspace read-write;
* nothing of exod's own files (:class:`~exo_core.sandbox.exod_files.ExodFiles`):
  the Exo home is an empty read-only folder, a store's private files read as
  empty and cannot be written, whatever path the command builds to reach them;
* its own processes only (a new PID namespace and ``/proc``), no network unless
  the gate allowed a network effect (a new network namespace), no capabilities,
  no inherited descriptors, a new session (no terminal injection);
* an environment made from an allowlist (no ``EXO_*``, no tokens): a fixed
  ``PATH``, the locale, git's author and committer, and ``HOME`` where the
  person's home is visible (else the sandbox's ``/tmp``);
* limits on CPU time, file size, processes and open files, set by a bash
  ``ulimit`` that sets the hard limit too, before the command starts.

The sandbox is checked once (:meth:`Sandbox.problem`) by starting ``true`` in
it exactly as a command would start. Where it cannot be set up (bubblewrap
missing, no user namespaces, a seccomp filter that forbids them) the shell
tool refuses with that reason: a command never runs unconfined.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from exo_core.sandbox.exod_files import ExodFiles

__all__ = ["Sandbox", "SandboxLimits", "clean_environment", "INSTALL_HINT"]

INSTALL_HINT = (
    "install bubblewrap (Debian/Raspberry Pi OS: `sudo apt install bubblewrap`) and allow unprivileged user "
    "namespaces (sysctl kernel.unprivileged_userns_clone=1; under systemd the unit must not set RestrictNamespaces)"
)
# The variables a command may inherit from exod, by name; everything else (EXO_*, tokens, keys) is dropped.
_PASSED_ON = (
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_NOSYSTEM",
)
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Emptied inside the sandbox: shared scratch space, and /run with the system's sockets.
_EMPTIED = ("/tmp", "/var/tmp", "/run", "/dev/shm")
# Where the resolver's address lives on systemd machines (/etc/resolv.conf links there): kept when network is on.
_RESOLVER = ("/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager")
# bash sets both the soft and the hard limit when given neither -S nor -H: the command cannot raise them.
_LIMITED_SHELL = 'ulimit -c 0 -t "$1" -f "$2" -u "$3" -n "$4" || exit 126; shift 4; exec /bin/bash -c "$1"'


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Per-command resource limits: CPU seconds, bytes per written file, processes, open files."""

    cpu_seconds: int = 600
    file_bytes: int = 1 << 30
    processes: int = 256
    open_files: int = 1024


def clean_environment(workspace: Path, files: ExodFiles | None = None) -> dict[str, str]:
    """The environment a tool process gets: a fixed ``PATH``, the locale, git's identity, and a ``HOME``.

    ``HOME`` is the person's (read-only: their git and ssh settings) unless it is one of ``files``' hidden
    folders or below one (the device runs exod with ``HOME`` in the Exo home), or under a folder the
    sandbox empties; then it is the sandbox's own ``/tmp``.
    """
    env = {
        "PATH": _PATH,
        "HOME": _home_for(files),
        "TMPDIR": "/tmp",
        "PWD": str(workspace),
        "TERM": "dumb",
        "USER": "exo-tool",
        "LOGNAME": "exo-tool",
        "SHELL": "/bin/bash",
    }
    for name in _PASSED_ON:
        value = os.environ.get(name)
        if value is not None:
            env[name] = value
    return env


def _home_for(files: ExodFiles | None) -> str:
    home = os.environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        return "/tmp"
    real = Path(os.path.realpath(home))
    hidden = [*_EMPTIED, *(files.hidden_folders() if files is not None else ())]
    if any(real == Path(folder) or Path(folder) in real.parents for folder in hidden):
        return "/tmp"
    return str(real)


class Sandbox:
    """Builds the bubblewrap command line that confines one tool process, and says when it cannot."""

    def __init__(
        self,
        files: ExodFiles,
        *,
        bwrap: str | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        self.files = files
        self.limits = limits or SandboxLimits()
        self._bwrap = bwrap
        self._problem: str | None = None
        self._lock = threading.Lock()

    @property
    def bwrap(self) -> str | None:
        """The bubblewrap executable: the one given, else the system's (its fixed ``PATH``, never exod's)."""
        return self._bwrap or shutil.which("bwrap", path=_PATH)

    def problem(self) -> str:
        """Why no command can run confined here ('' when one can); blocking: call it off the event loop.

        The check starts ``true`` in the sandbox once and remembers the answer; what it cannot
        remember (a hard link to one of exod's files, made since) is checked every time.
        """
        with self._lock:
            if self._problem is None:
                self._problem = self._probe()
        if self._problem:
            return self._problem
        linked = self.files.linked_elsewhere()
        if linked:
            return (
                f"{linked[0]} has another name (a hard link) outside exod's folders, which the sandbox cannot "
                "hide; remove that link"
            )
        return ""

    def _probe(self) -> str:
        bwrap = self.bwrap
        if bwrap is None:
            return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
        # The probe binds an empty folder as a command's workspace is bound.
        with tempfile.TemporaryDirectory(prefix="exo-sandbox-probe-") as scratch:
            probe = Path(os.path.realpath(scratch))
            argv = self._wrap(bwrap, ["/bin/true"], workspace=probe, network=False)
            try:
                done = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, env=self.environment(probe)
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"bubblewrap could not start ({exc}): {INSTALL_HINT}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"bubblewrap cannot set up a sandbox here ({said[-1] if said else done.returncode}): {INSTALL_HINT}"
        return ""

    def environment(self, workspace: Path) -> dict[str, str]:
        """The clean environment for a command in ``workspace`` (:func:`clean_environment` over these files)."""
        return clean_environment(workspace, self.files)

    def argv(self, command: str, workspace: Path, *, network: bool, cpu_seconds: int | None = None) -> list[str]:
        """The command line running ``command`` with bash in the sandbox, ``workspace`` read-write."""
        bwrap = self.bwrap
        if bwrap is None:
            raise FileNotFoundError("bwrap")
        limits = self.limits
        cpu = min(cpu_seconds or limits.cpu_seconds, limits.cpu_seconds)
        shell = [
            "/bin/bash",
            "-c",
            _LIMITED_SHELL,
            "exo-sandbox",
            str(max(1, cpu)),
            str(max(1, limits.file_bytes // 1024)),  # ulimit -f counts 1024-byte blocks in bash
            str(limits.processes),
            str(limits.open_files),
            command,
        ]
        return self._wrap(bwrap, shell, workspace=Path(os.path.realpath(workspace)), network=network)

    def _wrap(self, bwrap: str, inner: list[str], *, workspace: Path, network: bool) -> list[str]:
        args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
        if network:
            args.append("--share-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for scratch in _EMPTIED:
            if os.path.isdir(scratch):
                args += ["--tmpfs", scratch]
        if network:
            for resolver in _RESOLVER:
                if os.path.isdir(resolver):
                    args += ["--ro-bind", resolver, resolver]
        read_only: list[str] = []
        hidden = [folder for folder in self.files.hidden_folders() if os.path.isdir(folder)]
        # A hidden folder that holds the workspace is emptied before the workspace is bound back into it;
        # every other hidden folder and file after, so a workspace that holds one cannot show it.
        around = [folder for folder in hidden if folder in workspace.parents]
        for folder in around:
            args += ["--tmpfs", str(folder)]
            read_only.append(str(folder))
        args += ["--bind", str(workspace), str(workspace)]
        for folder in hidden:
            if folder not in around:
                args += ["--tmpfs", str(folder)]
                read_only.append(str(folder))
        for path in self.files.hidden_files():
            if os.path.isfile(path):
                args += ["--ro-bind", "/dev/null", str(path)]
        for emptied in read_only:
            args += ["--remount-ro", emptied]
        args += ["--chdir", str(workspace), "--", *inner]
        return args
