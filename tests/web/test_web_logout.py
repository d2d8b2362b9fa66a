"""Logging out revokes: a copy of the browser's cookie taken before stops working, on a real exod over TCP.

The other paired browsers stay signed in, and the revocation outlives a restart of exod.
"""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

from exo_testkit import write_script
from test_web_security import HELLO, call, pair_browser
from webkit import pair_code

from exo_core.web.cookies import WebAuth
from exo_core.web.sessions import MAX_SESSIONS, SESSIONS_FILE, WebSessions


def _signed_in(port: int, cookie: str) -> bool:
    return call(port, "GET", "/web/session", None, {"Cookie": cookie})[0] == 200


def test_a_copied_cookie_stops_working_after_logout_and_after_a_restart(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    with socket.socket() as probe:  # a fixed port, so the cookies' name and MAC hold across the restart
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exod = exod_factory(exo_home, script, workspace, extra=["--tcp", f"127.0.0.1:{port}"])
    ours = f"http://127.0.0.1:{port}"
    cookie, csrf = pair_browser(port, pair_code(exo_home))
    other, _other_csrf = pair_browser(port, pair_code(exo_home))
    copied = cookie  # taken from the browser's profile before it logs out
    assert _signed_in(port, cookie) and _signed_in(port, other)
    status, headers, body = call(
        port,
        "POST",
        "/web/logout",
        b"{}",
        {"Content-Type": "application/json", "Cookie": cookie, "Origin": ours, "X-Exo-CSRF": csrf},
    )
    assert status == 200 and json.loads(body)["revoked"] is True and "max-age=0" in headers["set-cookie"]
    assert not _signed_in(port, copied), "the copy is refused once the browser logged out"
    assert call(port, "POST", "/command", HELLO, {"Content-Type": "application/json", "Cookie": copied})[0] == 401
    assert _signed_in(port, other), "another browser stays signed in"
    book = exo_home / SESSIONS_FILE
    assert stat.S_IMODE(book.stat().st_mode) == 0o600
    assert cookie.split("=", 1)[1].split(".")[0] not in book.read_text(), "session ids are kept hashed"
    exod.stop()
    exod.start()
    assert not _signed_in(port, copied), "still revoked after a restart"
    assert _signed_in(port, other), "the other browser's session outlives the restart"


def test_the_session_list_is_bounded_and_expires(tmp_path: Path) -> None:
    now = [1000.0]
    sessions = WebSessions(tmp_path / SESSIONS_FILE, clock=lambda: now[0])
    auth = WebAuth("a" * 43, 8765, max_age=100, clock=lambda: now[0], sessions=sessions)
    cookies = [auth.mint()[0] for _ in range(MAX_SESSIONS + 5)]
    live = [c for c in cookies if auth.session_of({"exo_8765": c}) is not None]
    assert len(live) == MAX_SESSIONS and live == cookies[5:]
    reopened = WebAuth(
        "a" * 43,
        8765,
        max_age=100,
        clock=lambda: now[0],
        sessions=WebSessions(tmp_path / SESSIONS_FILE, clock=lambda: now[0]),
    )
    assert reopened.session_of({"exo_8765": cookies[-1]}) is not None, "the list survives a restart"
    now[0] += 101
    assert auth.session_of({"exo_8765": cookies[-1]}) is None
    (tmp_path / SESSIONS_FILE).write_text("{not json")
    assert (
        WebAuth("a" * 43, 8765, sessions=WebSessions(tmp_path / SESSIONS_FILE)).session_of({"exo_8765": cookies[-1]})
        is None
    ), "an unreadable list lets nobody in"
