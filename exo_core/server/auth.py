"""Who may talk to exod: the bearer token for TCP, Host/Origin checks, Unix peer uid.

* The TCP listener refuses to start without a token: 32 random bytes,
  URL-safe, from ``$EXO_TOKEN`` or the file ``$EXO_HOME/token`` (created
  exclusively with mode 0600; a file readable by others is refused).
* Every TCP request must carry ``Authorization: Bearer <token>``, compared in
  constant time. The token is never accepted from a URL.
* ``Host`` must name this server (DNS rebinding: a foreign page whose name now
  resolves to this device still sends its own name) and ``Origin``, when a
  browser sends one, must be this server's own origin (CSRF).
* On the Unix socket the peer's uid must be ours (``SO_PEERCRED``).
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import stat
import struct
from collections.abc import Iterable
from pathlib import Path

from exo_core.errors import AccessDeniedError, BearerTokenError, ConfigError

__all__ = ["load_or_create_token", "check_bearer", "HostPolicy", "peer_uid"]

_MIN_TOKEN_CHARS = 32


def load_or_create_token(token_path: Path, *, env: dict[str, str] | None = None) -> str:
    """The TCP token: ``$EXO_TOKEN``, else the token file (created 0600 when missing)."""
    from_env = (os.environ if env is None else env).get("EXO_TOKEN")
    if from_env:
        if len(from_env) < _MIN_TOKEN_CHARS:
            raise ConfigError(f"EXO_TOKEN is too short ({len(from_env)} chars); use at least {_MIN_TOKEN_CHARS}")
        return from_env
    token_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(token_path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"{token_path} has mode {mode:o}; other users could read it. Run: chmod 600 {token_path}"
            ) from None
        token = token_path.read_text(encoding="ascii").strip()
        if len(token) < _MIN_TOKEN_CHARS:
            raise ConfigError(f"{token_path} holds no usable token; delete it and a new one is made") from None
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return token


def check_bearer(header: str | None, token: str) -> None:
    """Raise :class:`BearerTokenError` unless ``header`` is ``Bearer <token>`` (constant time)."""
    if not header or not header.startswith("Bearer "):
        raise BearerTokenError("missing bearer token: send 'Authorization: Bearer <token>' (see $EXO_HOME/token)")
    offered = header[len("Bearer ") :].strip().encode("utf-8", "replace")
    if not hmac.compare_digest(offered, token.encode("utf-8")):
        raise BearerTokenError("wrong bearer token")


class HostPolicy:
    """Which ``Host`` and ``Origin`` values name this server."""

    def __init__(self, host: str, port: int, *, extra_names: Iterable[str] = ()) -> None:
        names = {host, "localhost", "127.0.0.1", "[::1]", *extra_names}
        if ":" in host and not host.startswith("["):
            names.add(f"[{host}]")
        self._hosts = {f"{n}:{port}".lower() for n in names} | ({n.lower() for n in names} if port == 80 else set())
        self._origins = {f"http://{h}" for h in self._hosts}

    def check(self, host_header: str | None, origin_header: str | None) -> None:
        """Raise :class:`AccessDeniedError` for a foreign Host or Origin."""
        if not host_header or host_header.lower() not in self._hosts:
            raise AccessDeniedError(
                f"Host {host_header!r} does not name this server; to accept it, restart exod with "
                f"`exo serve --allow-host NAME` (NAME without the port)"
            )
        if origin_header is not None and origin_header.lower() not in self._origins:
            raise AccessDeniedError(f"Origin {origin_header!r} is not this server's page")


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux), else ``None``."""
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]  # (pid, uid, gid)
