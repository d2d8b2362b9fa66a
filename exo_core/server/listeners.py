"""Listening sockets: the 0600 Unix socket and the token-guarded TCP port.

The Unix socket's directory is made 0700; the socket is bound under umask
0o177 so there is no moment when it is open to others, then set to 0600. A
stale socket file left by a killed daemon is removed only after checking that
nothing answers on it.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from exo_core.errors import ConfigError, ResourceError

__all__ = ["bind_unix", "bind_tcp", "parse_hostport"]


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` with mode 0600 in a 0700 directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    if path.exists() or path.is_symlink():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()  # stale: nobody listens
            else:
                raise ResourceError(f"another exod is already listening on {path}")
    if len(os.fsencode(path)) > 107:
        raise ResourceError(
            f"socket path {path} is {len(os.fsencode(path))} bytes; Unix sockets allow at most 107. "
            "Use a shorter EXO_HOME"
        )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ResourceError(f"cannot bind {path}: {exc.strerror or exc}") from exc
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def parse_hostport(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as a pair; a clear error otherwise."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--tcp wants HOST:PORT, e.g. 127.0.0.1:8765, not {value!r}")
    number = int(port)
    if not 0 <= number <= 65535:
        raise ConfigError(f"port {number} is out of range")
    return host.strip("[]"), number


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0 picks a free one)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ResourceError(f"{host}:{port} is already in use; pick another port") from exc
        raise ResourceError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock
