"""A tiny synchronous HTTP client over a Unix socket or TCP, for tests that need raw requests."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 30.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def request(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    return resp.status, resp.read()


def post_command(path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    conn = UnixHTTPConnection(path)
    try:
        status, data = request(conn, "POST", "/command", body, {"Content-Type": "application/json", **(headers or {})})
    finally:
        conn.close()
    return status, json.loads(data)
