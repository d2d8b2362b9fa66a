"""Socket and token file modes; TCP refuses requests without the right token, Host or Origin."""

from __future__ import annotations

import http.client
import os
import socket
import stat
from pathlib import Path

import pytest
from exo_testkit import write_script
from unixhttp import request

from exo_core.errors import ConfigError
from exo_core.server.auth import load_or_create_token

ENDPOINTS = [
    ("GET", "/health", None),
    ("GET", "/events?since=0", None),
    ("POST", "/command", b'{"id":"1","type":"hello","body":{"protocol":1}}'),
]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def tcp_exod(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path):
    d = exod_factory(
        exo_home, write_script(tmp_path / "s.json", [{"text": "ok"}]), workspace, extra=["--tcp", "127.0.0.1:0"]
    )
    port = int((exo_home / "run" / "tcp.port").read_text())
    token = (exo_home / "token").read_text().strip()
    return d, port, token


def test_socket_is_0600_in_a_0700_directory_and_token_file_is_0600(tcp_exod) -> None:
    d, _port, _token = tcp_exod
    assert stat.S_ISSOCK(d.socket.stat().st_mode)
    assert mode(d.socket) == 0o600
    assert mode(d.socket.parent) == 0o700
    assert mode(d.home / "token") == 0o600


def tcp(port: int, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        status = resp.status
        if status == 200 and path.startswith("/events"):
            return status
        resp.read()
        return status
    finally:
        conn.close()


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_tcp_refuses_missing_and_wrong_tokens_on_every_endpoint(
    tcp_exod, method: str, path: str, body: bytes | None
) -> None:
    _d, port, token = tcp_exod
    host = {"Host": f"127.0.0.1:{port}"}
    assert tcp(port, method, path, body, host) == 401
    assert tcp(port, method, path, body, {**host, "Authorization": "Bearer " + "x" * len(token)}) == 401
    assert tcp(port, method, path, body, {**host, "Authorization": token}) == 401
    assert tcp(port, method, path, body, {**host, "Authorization": f"Bearer {token}"}) == 200


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_tcp_refuses_foreign_host_and_origin(tcp_exod, method: str, path: str, body: bytes | None) -> None:
    _d, port, token = tcp_exod
    auth = {"Authorization": f"Bearer {token}"}
    assert tcp(port, method, path, body, {**auth, "Host": f"evil.example:{port}"}) == 403
    assert tcp(port, method, path, body, {**auth}) in (400, 403)  # no Host at all (HTTP/1.1 requires one)
    assert tcp(port, method, path, body, {**auth, "Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"}) == 403
    assert (
        tcp(port, method, path, body, {**auth, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
        == 200
    )


def test_token_never_accepted_from_the_url(tcp_exod) -> None:
    _d, port, token = tcp_exod
    assert tcp(port, "GET", f"/health?token={token}", None, {"Host": f"127.0.0.1:{port}"}) == 401


def test_tcp_refuses_to_start_without_a_usable_token(exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    from exo_testkit import Exod

    (exo_home / "token").write_text("short\n")
    os.chmod(exo_home / "token", 0o600)
    d = Exod(exo_home, write_script(tmp_path / "s.json", []), workspace, extra=["--tcp", "127.0.0.1:0", "--no-unix"])
    with pytest.raises(RuntimeError, match="no usable token"):
        d.start(timeout=20)


def test_token_file_rules(tmp_path: Path) -> None:
    path = tmp_path / "token"
    token = load_or_create_token(path, env={})
    assert len(token) >= 43 and mode(path) == 0o600
    assert load_or_create_token(path, env={}) == token
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_or_create_token(path, env={})
    assert load_or_create_token(path, env={"EXO_TOKEN": "e" * 40}) == "e" * 40
    with pytest.raises(ConfigError, match="too short"):
        load_or_create_token(path, env={"EXO_TOKEN": "short"})


def test_unix_socket_needs_no_token(tcp_exod) -> None:
    from unixhttp import UnixHTTPConnection

    d, _port, _token = tcp_exod
    conn = UnixHTTPConnection(str(d.socket))
    try:
        status, _ = request(conn, "GET", "/health")
    finally:
        conn.close()
    assert status == 200


def test_a_second_exod_on_the_same_socket_is_refused(tcp_exod) -> None:
    import subprocess
    import sys

    from exo_testkit import ROOT

    d, _port, _token = tcp_exod
    proc = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "serve", "--home", str(d.home), "--model", f"scripted:{d.script}"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "already listening" in proc.stderr
    probe = socket.socket(socket.AF_UNIX)
    assert probe.connect_ex(str(d.socket)) == 0, "the first exod still serves"
    probe.close()
