"""Issue 19 items 6 and 10 over TCP against a real exod: every input gets a typed answer.

On main: 493 of 12,000 fuzzed ``/command`` bodies got 500 (big integers, lone
surrogates), ``POST /pair`` 500'd on deep nesting and big integers and read 8 MB
bodies from anyone, ``/events?since=99999999999999999999`` broke the stream,
five wrong pairing codes from anyone locked the owner out, the ``Server`` header
named Python's and aiohttp's versions, and a refused Host pointed at a config
key nothing reads.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path

import pytest
from exo_testkit import write_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unixhttp import UnixHTTPConnection, request

EXAMPLES = int(os.environ.get("EXO_FUZZ_EXAMPLES", "150"))
TYPED = {
    "malformed",
    "unknown_command",
    "bad_body",
    "too_large",
    "not_found",
    "conflict",
    "unsupported",
    "bad_request",
    "bad_config",
    "timeout",
}


@pytest.fixture(scope="module")
def tcp_exod(tmp_path_factory: pytest.TempPathFactory):
    from exo_testkit import Exod

    base = tmp_path_factory.mktemp("http")
    ws = base / "ws"
    ws.mkdir()
    d = Exod(base / "home", write_script(base / "s.json", [{"text": "ok"}]), ws, extra=["--tcp", "127.0.0.1:0"])
    d.start()
    port = int((d.home / "run" / "tcp.port").read_text())
    token = (d.home / "token").read_text().strip()
    yield d, port, token
    d.stop()


def pair_code(d) -> str:
    """A fresh code, as `exo pair` gets it: ``POST /pair/new`` on the owner's Unix socket."""
    conn = UnixHTTPConnection(str(d.socket))
    try:
        status, data = request(conn, "POST", "/pair/new")
    finally:
        conn.close()
    assert status == 200, data
    return json.loads(data)["code"]


def call(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    source: str = "127.0.0.1",
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", f"127.0.0.1:{port}")
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def command(port: int, token: str, body: bytes) -> tuple[int, dict]:
    status, _headers, data = call(
        port, "POST", "/command", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    return status, json.loads(data)


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":"1","type":"hello","body":{"protocol":' + b"9" * 5000 + b"}}",
        b'{"id":"1","type":"config.set","body":{"key":"k","value":' + b"9" * 40 + b"}}",
        b'{"id":"\\ud800","type":"hello","body":{"protocol":1}}',
        b'{"id":"1","type":"session.create","body":{"title":"t\\udc00"}}',
        b'{"id":"1","type":"config.set","body":{"key":"k","value":[1e999]}}',
        b'{"id":"1","type":"config.set","body":{"key":"k","value":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"id":"1","type":"config.set","body":{"key":"k","value":[' + b",".join([b"1"] * 1_000_000) + b"]}}",
    ],
    ids=["int-5000-digits", "int-40-digits", "surrogate-id", "surrogate-title", "inf", "deep", "wide"],
)
def test_command_answers_hostile_bodies_with_typed_4xx(tcp_exod, body: bytes) -> None:
    _d, port, token = tcp_exod
    status, reply = command(port, token, body)
    assert 400 <= status < 500, reply
    assert reply["ok"] is False and reply["error"]["code"] in TYPED and reply["error"]["message"]


def test_events_since_out_of_range_is_a_typed_400(tcp_exod) -> None:
    _d, port, token = tcp_exod
    auth = {"Authorization": f"Bearer {token}"}
    for since in ("99999999999999999999", "-1", "1e3", "%D9%A3"):
        status, _h, data = call(port, "GET", f"/events?since={since}", headers=auth)
        assert status == 400 and json.loads(data)["error"]["code"] == "bad_request", since
    status, _h, data = call(port, "GET", "/events?since=0", headers={**auth, "Last-Event-ID": "9" * 30})
    assert status == 400


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b'{"code":' + b"[" * 1500 + b"]" * 1500 + b"}", 400, "malformed"),
        (b'{"code":"AAAA-AAAA","want":' + b"9" * 4000 + b"}", 400, "malformed"),
        (b'{"code":"AAAA-AAAA","want":' + b"9" * 5000 + b"}", 413, "too_large"),
        (b'{"code":"\\ud800"}', 400, "malformed"),
        (b'{"code":"' + b"A" * (8 * 1024 * 1024) + b'"}', 413, "too_large"),
        (b"[1]", 400, "malformed"),
    ],
    ids=["deep", "big-int", "huge-int", "surrogate", "8MB", "not-object"],
)
def test_pair_is_typed_and_small_for_everyone(tcp_exod, body: bytes, status: int, code: str) -> None:
    _d, port, _token = tcp_exod
    got, _h, data = call(port, "POST", "/pair", body, {"Content-Type": "application/json"}, source="127.0.0.9")
    reply = json.loads(data)
    assert (got, reply["error"]["code"]) == (status, code), reply


def test_wrong_pairing_codes_lock_out_only_their_source(tcp_exod) -> None:
    d, port, _token = tcp_exod
    code = pair_code(d)
    wrong = json.dumps({"code": "ZZZZ-ZZZZ"}).encode()
    attacker = [
        call(port, "POST", "/pair", wrong, {"Content-Type": "application/json"}, source="127.0.0.66")[0]
        for _ in range(6)
    ]
    assert attacker == [401, 401, 401, 401, 429, 429]
    owner = call(
        port,
        "POST",
        "/pair",
        json.dumps({"code": code, "want": "token"}).encode(),
        {"Content-Type": "application/json"},
    )
    assert owner[0] == 200, "the owner pairs from another address while the guesser is locked out"


def test_server_header_is_plain_everywhere(tcp_exod) -> None:
    d, port, token = tcp_exod
    for status_path in ("/health", "/nope", "/"):
        _status, headers, _data = call(port, "GET", status_path, headers={"Authorization": f"Bearer {token}"})
        assert headers["server"] == "exod", headers
    _status, headers, _data = call(port, "GET", "/health")  # 401
    assert headers["server"] == "exod"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GARBAGE / HTTP/9.9\r\n\r\n")
        answer = raw.recv(4096).decode(errors="replace")
    assert answer.startswith("HTTP/1.") and " 400 " in answer and "Server: exod\r\n" in answer, answer
    assert "Python" not in answer and "aiohttp" not in answer


def test_a_refused_host_says_how_to_allow_it(tcp_exod) -> None:
    _d, port, token = tcp_exod
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/health", headers={"Host": "device.lan:1", "Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        message = json.loads(resp.read())["error"]["message"]
    finally:
        conn.close()
    assert resp.status == 403 and "--allow-host" in message and "config.toml" not in message


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["\ud800", "a\udfffb"]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=12,
)


def _encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


bodies = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda t, v: _encode({"id": "f", "type": t, "body": v}),
        st.sampled_from(["hello", "config.set", "session.create", "search", "turn.send", "question.answer"]),
        st.dictionaries(
            st.sampled_from(["key", "value", "title", "query", "text", "session", "protocol"]), json_values
        ),
    ),
    json_values.map(lambda v: _encode({"id": v, "type": "hello", "body": {"protocol": 1}})),
)


@given(bodies)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_commands_over_tcp_never_500(tcp_exod, body: bytes) -> None:
    _d, port, token = tcp_exod
    status, _h, data = call(
        port, "POST", "/command", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    assert status < 500, data
    reply = json.loads(data)
    if not reply["ok"]:
        assert reply["error"]["code"] in TYPED, reply


@given(st.one_of(st.binary(max_size=120), json_values.map(lambda v: _encode({"code": v}))))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_pair_bodies_never_500(tcp_exod, body: bytes) -> None:
    _d, port, _token = tcp_exod
    status, _h, data = call(port, "POST", "/pair", body, {"Content-Type": "application/json"}, source="127.0.0.77")
    assert status < 500 and json.loads(data)["ok"] is False


def test_header_bytes_that_are_not_utf8_are_refused_not_500(tcp_exod) -> None:
    _d, port, _token = tcp_exod
    for path, header in (
        ("/web/session", b"Cookie: exo_%d=a\xff.b.c" % port),
        ("/web/store", b"Cookie: exo_%d=a\xed\xa0\x80.1.c" % port),
        ("/health", b"Authorization: Bearer \xff\xfe"),
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port + header + b"\r\n\r\n")
            status_line = raw.recv(4096).split(b"\r\n")[0]
        assert status_line.split()[1] == b"401", (path, status_line)
