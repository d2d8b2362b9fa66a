"""Issue 19 item 3: a peer on the LAN cannot hold exod's TCP listener or starve the owner's socket.

On main, 1,300 idle unauthenticated connections stayed open for 130 s, 300
filled the file-descriptor table, after which the owner's Unix socket stopped
answering and asyncio logged 223,734 EMFILE tracebacks. Here real exod
processes get the same treatment from many loopback source addresses
(127.0.0.x): connections over a cap are closed at once, idle and slow ones
after the header timeout, a slow body gets 408, the Unix socket keeps
answering, and the log stays a few lines long.
"""

from __future__ import annotations

import json
import os
import resource
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from exo_testkit import ROOT, Exod, write_script
from unixhttp import UnixHTTPConnection, request


def idle_connections(port: int, sources: list[str], each: int, *, wait: bool = True) -> list[socket.socket]:
    """Open ``each`` idle TCP connections from every source address; send nothing.

    With ``wait=False`` the connects are only started (a flood does not wait for the handshake).
    """
    opened = []
    for source in sources:
        for _ in range(each):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((source, 0))
            if wait:
                sock.connect(("127.0.0.1", port))
            else:
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
            opened.append(sock)
    return opened


def closed_by_server(socks: list[socket.socket], wait: float) -> int:
    """How many of ``socks`` the server closed within ``wait`` seconds (EOF or reset)."""
    deadline = time.monotonic() + wait
    closed: set[int] = set()
    while time.monotonic() < deadline and len(closed) < len(socks):
        live = [s for s in socks if s.fileno() not in closed]
        readable, _, _ = select.select(live, [], [], 0.2)
        for sock in readable:
            try:
                data = sock.recv(4096)
            except (ConnectionResetError, OSError):
                data = b""
            if not data:
                closed.add(sock.fileno())
    return len(closed)


def unix_health(path: Path) -> int:
    conn = UnixHTTPConnection(str(path), timeout=10)
    try:
        status, _ = request(conn, "GET", "/health")
    finally:
        conn.close()
    return status


def log_lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines()


def test_caps_idle_slow_headers_and_slow_bodies(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    flags = ["--tcp", "127.0.0.1:0", "--tcp-max-per-address", "8", "--tcp-max-connections", "20"]
    flags += ["--tcp-header-timeout", "3", "--tcp-body-timeout", "2"]
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", [{"text": "ok"}]), workspace, extra=flags)
    port = int((exo_home / "run" / "tcp.port").read_text())
    token = (exo_home / "token").read_text().strip()

    one_source = idle_connections(port, ["127.0.0.5"], 12)
    assert closed_by_server(one_source, 1.0) == 4, "4 over the per-address cap of 8 are closed at once"
    many_sources = idle_connections(port, [f"127.0.0.{i}" for i in range(10, 15)], 3)
    assert closed_by_server(many_sources, 1.0) == 3, "8 + 15 = 23 open: 3 over the total cap of 20"
    assert unix_health(d.socket) == 200, "the owner's socket answers during the flood"

    slow = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.40", 0))
    started = time.monotonic()
    for byte in b"GET /health HTTP/1.1\r\nHost: x":  # slowloris: a byte at a time, never finishing the headers
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            break
        if closed_by_server([slow], 0.25):
            break
    assert time.monotonic() - started < 10, "slow headers are cut at the header timeout"
    everyone = one_source + many_sources
    assert closed_by_server(everyone, 6.0) == len(everyone), "idle connections are closed after the header timeout"

    body = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = f"POST /command HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
    body.sendall((head + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{").encode())
    answer = body.recv(4096).decode()
    assert " 408 " in answer.splitlines()[0] and '"timeout"' in answer, answer

    lines = log_lines(d.log)
    assert sum("refusing a TCP connection" in line for line in lines) <= 2, lines
    for sock in [*everyone, slow, body]:
        sock.close()


def test_a_connection_flood_never_takes_the_owners_socket(exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    """exod under a 256-descriptor limit, 600 idle connections from 20 addresses: the owner is still served."""

    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    d = Exod(exo_home, script, workspace, extra=["--tcp", "127.0.0.1:0", "--log-level", "INFO"])
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_HOME", "EXO_MODEL")}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(exo_home), "--model", f"scripted:{script}"]
    cmd += ["--workspace", str(workspace), "--tcp", "127.0.0.1:0", "--log-level", "INFO"]
    with open(d.log, "ab") as log:
        d.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, preexec_fn=low_fd_limit)  # noqa: PLW1509 - the limit must be set in the child
    try:
        deadline = time.monotonic() + 60
        while not d.ready():
            assert d.proc.poll() is None and time.monotonic() < deadline, d.log.read_text()
            time.sleep(0.05)
        port = int((exo_home / "run" / "tcp.port").read_text())
        before = len(log_lines(d.log))
        flood = idle_connections(port, [f"127.0.1.{i}" for i in range(1, 21)], 30, wait=False)
        time.sleep(2.0)
        answers = [unix_health(d.socket) for _ in range(5)]
        assert answers == [200] * 5, "the owner's Unix socket answers while 600 TCP connections are attempted"
        session = json.loads(
            request(UnixHTTPConnection(str(d.socket)), "POST", "/command", b'{"id":"1","type":"session.create"}')[1]
        )
        assert session["ok"] is True, "and can still open files (a session database write)"
        flood_log = log_lines(d.log)[before:]
        assert len(flood_log) < 20, "the log stays a few lines long:\n" + "\n".join(flood_log[:40])
        assert not any("Too many open files" in line for line in flood_log)
        for sock in flood:
            sock.close()
    finally:
        d.stop()
