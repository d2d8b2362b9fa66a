"""Where an action lands: inside the workspace or not, a local host or not, a private remote or not.

A :class:`Scope` is the part of the person's policy the classifier needs:
the folders that count as the workspace (edits there are reversible), the
hosts that count as this machine, and the git remotes the person owns alone
(pushing there is not publishing). Everything else is treated as outside,
remote and shared, because guessing "safe" is the failure that hurts.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from exo_core.errors import ConfigError

__all__ = ["Scope", "url_host"]

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "0.0.0.0"})
_SCRATCH = (Path("/tmp"), Path("/var/tmp"), Path("/dev/null"), Path("/dev/stdout"), Path("/dev/stderr"))


@dataclass(frozen=True, slots=True)
class Scope:
    """The workspace roots, local host names and private git remotes of a policy."""

    workspace: tuple[Path, ...] = ()
    local_hosts: frozenset[str] = frozenset()
    private_remotes: frozenset[str] = frozenset()
    # exod's own files, which the file tools may not touch (exo_core.gate.paths): the Exo home and the stores.
    exo_home: Path | None = None
    stores: tuple[Path, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, workspace: Path | None = None) -> Scope:
        """A scope from a policy's ``[scopes]`` table, plus the session's workspace."""
        unknown = sorted(set(data) - {"workspace", "local_hosts", "private_remotes"})
        if unknown:
            raise ConfigError(f"unknown key scopes.{unknown[0]}; use workspace, local_hosts or private_remotes")
        roots = [workspace] if workspace is not None else []
        roots += [Path(raw).expanduser() for raw in _strings(data, "workspace")]
        return cls(
            workspace=tuple(_real(p) for p in roots),
            local_hosts=frozenset(h.lower() for h in _strings(data, "local_hosts")),
            private_remotes=frozenset(_strings(data, "private_remotes")),
        )

    def with_workspace(self, workspace: Path) -> Scope:
        """This scope with ``workspace`` as its first root."""
        return dataclasses.replace(self, workspace=(_real(workspace), *self.workspace))

    def with_exo(self, home: Path | None, stores: tuple[Path, ...] = ()) -> Scope:
        """This scope guarding the Exo home ``home`` and the store folders ``stores`` (for file paths)."""
        return dataclasses.replace(
            self,
            exo_home=_real(Path(home).expanduser()) if home is not None else None,
            stores=tuple(_real(Path(s).expanduser()) for s in stores),
        )

    def resolve(self, raw: str, cwd: Path | None = None) -> Path:
        """``raw`` as an absolute, normalized path (relative to ``cwd`` or the workspace)."""
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            base = cwd or (self.workspace[0] if self.workspace else Path.cwd())
            path = base / path
        return _real(path)

    def inside(self, raw: str, cwd: Path | None = None) -> bool:
        """Whether ``raw`` lies in the workspace (a scratch folder such as /tmp counts too)."""
        path = self.resolve(raw, cwd)
        if any(path == root or root in path.parents for root in self.workspace):
            return True
        # Scratch folders count only below their root: deleting /tmp itself is not scratch work.
        return any(root in path.parents or path == root and root.parent == Path("/dev") for root in _SCRATCH)

    def local_host(self, host: str) -> bool:
        """Whether ``host`` is this machine (loopback, ``localhost``, or named in the policy)."""
        host = host.strip("[]").lower()
        if not host or host in _LOCAL_NAMES or host.endswith(".localhost") or host in self.local_hosts:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def private_remote(self, remote: str) -> bool:
        """Whether pushing to ``remote`` (a name or URL) stays with the person."""
        return remote in self.private_remotes


def url_host(url: str) -> str | None:
    """The host of ``url`` (``http://h/…``, ``h/…``, ``user@h:…``), or ``None`` if it has none."""
    if "://" not in url:
        if url.startswith(("-", "/", ".")) or "." not in url.split("/", 1)[0] and not url.startswith("localhost"):
            return None
        url = "http://" + url
    try:
        return (urlsplit(url).hostname or "").lower() or None
    except ValueError:
        return None


def _strings(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"scopes.{key} must be a list of strings")
    return value


def _real(path: Path) -> Path:
    # normpath, not resolve(): classification must not depend on what exists on disk right now.
    return Path(os.path.normpath(str(path)))
