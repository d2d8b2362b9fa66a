"""Over TCP against a real exod: the page is public but Host-checked; everything else needs the
token or a paired browser's cookie; cross-site requests, tokens in URLs and guessed codes are refused."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest
from exo_testkit import write_script
from webkit import exo, pair_code

from exo_core.web.cookies import WebAuth
from exo_core.web.pairing import PairingCodes, PairingLockedError, PairingRefusedError

HELLO = b'{"id":"1","type":"hello","body":{"protocol":1}}'


@pytest.fixture
def tcp(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path):
    d = exod_factory(
        exo_home, write_script(tmp_path / "s.json", [{"text": "ok"}]), workspace, extra=["--tcp", "127.0.0.1:0"]
    )
    port = int((exo_home / "run" / "tcp.port").read_text())
    return d, port, (exo_home / "token").read_text().strip()


def call(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    host: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = b"" if (resp.status == 200 and path.startswith("/events")) else resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def pair_browser(port: int, code: str) -> tuple[str, str]:
    """Redeem a code as a browser would; returns (cookie header, csrf)."""
    status, headers, data = call(
        port,
        "POST",
        "/pair",
        json.dumps({"code": code}).encode(),
        {"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port}"},
    )
    assert status == 200, data
    cookie = headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in cookie
    return cookie.split(";")[0], json.loads(data)["csrf"]


def test_the_page_is_public_host_checked_and_carries_no_secret(tcp) -> None:
    _d, port, token = tcp
    for path in ("/", "/static/app.js", "/static/app.css"):
        status, headers, body = call(port, "GET", path)
        assert status == 200 and token.encode() not in body
    status, headers, _ = call(port, "GET", "/")
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"
    assert call(port, "GET", "/", host=f"rebound.example:{port}")[0] == 403, "DNS rebinding: a foreign Host is refused"
    assert call(port, "GET", "/static/..%2Ftoken")[0] == 404
    assert call(port, "GET", "/static/pairing.py")[0] == 404


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/command", HELLO),
        ("GET", "/events?since=0", None),
        ("GET", "/health", None),
        ("GET", "/web/store", None),
        ("GET", "/web/session", None),
    ],
)
def test_no_token_wrong_token_or_token_in_the_url_is_refused(tcp, method: str, path: str, body: bytes | None) -> None:
    _d, port, token = tcp
    assert call(port, method, path, body)[0] == 401
    assert call(port, method, path, body, {"Authorization": "Bearer " + "x" * len(token)})[0] == 401
    sep = "&" if "?" in path else "?"
    assert call(port, method, f"{path}{sep}token={token}", body)[0] == 401
    assert call(port, method, f"{path}{sep}access_token={token}", body, {"Cookie": f"exo_{port}={token}"})[0] == 401
    assert call(port, method, path, body, {"Authorization": f"Bearer {token}"})[0] in (200, 404)  # 404: no store here


def test_cross_site_requests_with_the_cookie_are_refused(tcp, exo_home: Path) -> None:
    _d, port, _token = tcp
    cookie, csrf = pair_browser(port, pair_code(exo_home))
    ours = f"http://127.0.0.1:{port}"
    json_type = {"Content-Type": "application/json"}
    ok = {**json_type, "Cookie": cookie, "Origin": ours, "X-Exo-CSRF": csrf}
    assert call(port, "POST", "/command", HELLO, ok)[0] == 200
    # A foreign page posting (the browser would add the cookie only without SameSite=Strict):
    assert call(port, "POST", "/command", HELLO, {**ok, "Origin": "http://evil.example"})[0] == 403
    assert call(port, "POST", "/command", HELLO, {**json_type, "Cookie": cookie, "X-Exo-CSRF": csrf})[0] == 403
    assert call(port, "POST", "/command", HELLO, {**json_type, "Cookie": cookie, "Origin": ours})[0] == 403
    assert call(port, "POST", "/command", HELLO, {**ok, "X-Exo-CSRF": csrf[:-2] + "xx"})[0] == 403
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Origin": "http://evil.example"}
    assert call(port, "POST", "/command", b"id=1&type=hello", form)[0] == 403
    assert call(port, "POST", "/web/logout", b"{}", {**json_type, "Cookie": cookie, "Origin": ours})[0] == 403
    # Reads with the cookie work (same-origin GETs change nothing); a forged cookie does not.
    assert call(port, "GET", "/health", None, {"Cookie": cookie})[0] == 200
    status, _h, data = call(port, "GET", "/web/session", None, {"Cookie": cookie})
    assert status == 200 and json.loads(data)["csrf"] == csrf
    sid, expires, _mac = cookie.split("=", 1)[1].split(".")
    assert call(port, "GET", "/web/store", None, {"Cookie": f"exo_{port}={sid}.{expires}.forged"})[0] == 401
    assert call(port, "GET", "/events?since=0", None, {"Cookie": cookie})[0] == 200


def test_pairing_codes_are_single_use_json_only_and_rate_limited(tcp, exo_home: Path) -> None:
    _d, port, token = tcp
    code = pair_code(exo_home)
    body = json.dumps({"code": code}).encode()
    assert (
        call(port, "POST", "/pair", f"code={code}".encode(), {"Content-Type": "application/x-www-form-urlencoded"})[0]
        == 415
    ), "a cross-site form cannot pair"
    assert (
        call(port, "POST", "/pair", body, {"Content-Type": "application/json", "Origin": "http://evil.example"})[0]
        == 403
    )
    status, _h, data = call(
        port,
        "POST",
        "/pair",
        json.dumps({"code": code.lower(), "want": "token"}).encode(),
        {"Content-Type": "application/json"},
    )
    assert status == 200 and json.loads(data)["token"] == token, "a terminal client gets the token, not in a URL"
    assert call(port, "POST", "/pair", body, {"Content-Type": "application/json"})[0] == 401, "single use"
    fresh = pair_code(exo_home)
    statuses = [
        call(
            port, "POST", "/pair", json.dumps({"code": f"AAAA-AAA{i}"}).encode(), {"Content-Type": "application/json"}
        )[0]
        for i in range(2, 7)
    ]
    assert statuses == [401, 401, 401, 401, 429]
    locked = call(port, "POST", "/pair", json.dumps({"code": fresh}).encode(), {"Content-Type": "application/json"})
    assert locked[0] == 429, "after too many guesses the source that sent them is locked out"
    cookie, _csrf = pair_browser(port, pair_code(exo_home))  # the owner issuing a new code unlocks pairing
    assert cookie.startswith(f"exo_{port}=")


def test_exo_pair_on_the_laptop_stores_the_token_0600_and_chat_finds_it(tcp, exo_home: Path, tmp_path: Path) -> None:
    _d, port, token = tcp
    config = tmp_path / "laptop-config"
    url = f"http://127.0.0.1:{port}"
    out = exo(
        "pair",
        "--connect",
        url,
        "--code",
        pair_code(exo_home),
        home=tmp_path / "laptop",
        env={"XDG_CONFIG_HOME": str(config)},
    )
    assert out.returncode == 0, out.stderr
    saved = config / "exo" / "tokens" / f"127.0.0.1_{port}"
    assert saved.read_text().strip() == token and saved.stat().st_mode & 0o777 == 0o600
    bad = exo(
        "pair", "--connect", url, "--code", "ZZZZ-ZZZZ", home=tmp_path / "laptop", env={"XDG_CONFIG_HOME": str(config)}
    )
    assert bad.returncode == 2 and "wrong, used or expired" in bad.stderr


def test_exo_pair_without_tcp_says_how(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    out = exo("pair", home=exo_home)
    assert out.returncode == 2 and "not listening on TCP" in out.stderr


def test_pairing_codes_expire_and_cookies_are_bound_to_the_server_and_expire() -> None:
    now = [1000.0]
    codes = PairingCodes(ttl=60, clock=lambda: now[0])
    code = codes.issue().code
    now[0] += 61
    with pytest.raises(PairingRefusedError):
        codes.redeem(code)
    locked = PairingCodes(max_failures=2, lockout=30, clock=lambda: now[0])
    with pytest.raises(PairingRefusedError):
        locked.redeem("nope")
    with pytest.raises(PairingLockedError):
        locked.redeem("nope")

    auth = WebAuth("a" * 43, 8765, max_age=100, clock=lambda: now[0])
    cookie, csrf = auth.mint()
    assert auth.session_of({"exo_8765": cookie}) is not None
    assert WebAuth("b" * 43, 8765, clock=lambda: now[0]).session_of({"exo_8765": cookie}) is None, "another server"
    assert WebAuth("a" * 43, 8766, clock=lambda: now[0]).session_of({"exo_8766": cookie}) is None, "another port"
    now[0] += 101
    assert auth.session_of({"exo_8765": cookie}) is None, "expired"
