"""The routes exod adds for the web page and for pairing.

TCP listener (the laptop):

* ``GET /`` and ``GET /static/<file>`` — the page (plain HTML/JS/CSS shipped
  in ``exo_core/web/static/``), public but Host-checked, with a strict
  Content-Security-Policy and no framing;
* ``POST /pair`` ``{"code", "want": "cookie"|"token"}`` — redeem a pairing
  code for a browser session cookie, or for the bearer token (a terminal
  client on the laptop); JSON only, so a cross-site form cannot post it; the
  body is at most ``public_body_bytes`` (4 KB), and wrong codes lock out only
  the source that sent them (:mod:`exo_core.web.pairing`);
* ``GET /web/session`` — the CSRF token of this browser's session;
* ``POST /web/logout`` — end this browser's session on the server and forget its cookie;
* ``GET /web/store``, ``GET /web/store/node?id=`` — read-only store browser.

Unix socket (the owner at the device): ``POST /pair/new`` issues a code.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from exo_core.errors import ExoError
from exo_core.protocol import parse_json_object
from exo_core.server.limits import ConnectionLimits, read_body, source_key
from exo_core.store.node import Node
from exo_core.web.cookies import WebAuth
from exo_core.web.pairing import PairingCodes
from exo_core.web.taste import open_store

__all__ = ["tcp_routes", "unix_routes", "static_dir"]

_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_dir() -> Path:
    """Where the page's files are."""
    return Path(str(resources.files("exo_core.web") / "static"))


def _bad(message: str, status: int = 400, code: str = "bad_request") -> web.Response:
    return web.json_response({"ok": False, "error": {"code": code, "message": message}}, status=status)


def _fail(exc: ExoError) -> web.Response:
    return _bad(exc.message, exc.http_status, exc.code)


def tcp_routes(
    auth: WebAuth,
    codes: PairingCodes,
    token: str,
    store_root: Path | None,
    *,
    limits: ConnectionLimits = ConnectionLimits(),
) -> Any:
    """A route adder for :func:`exo_core.server.http.build_app` on the TCP listener."""
    folder = static_dir()
    files = {p.name: p for p in folder.iterdir() if p.suffix in _TYPES} if folder.is_dir() else {}

    async def page(request: web.Request) -> web.StreamResponse:
        name = request.match_info.get("name", "index.html")
        path = files.get(name)
        if path is None:
            missing = "" if files else f" (this install lacks the page files in {folder})"
            return _bad(f"no page file {name!r}{missing}", 404)
        return web.Response(
            body=path.read_bytes(), content_type=_TYPES[path.suffix], charset="utf-8", headers=_PAGE_HEADERS
        )

    async def pair(request: web.Request) -> web.Response:
        # Anyone on the LAN may call this: a small body, read within the body timeout, parsed with every limit.
        if request.content_type != "application/json":
            return _bad('send the pairing code as JSON: {"code": "XXXX-XXXX"}', 415)
        try:
            raw = await read_body(request, limit=limits.public_body_bytes, timeout=limits.body_timeout)
            data = parse_json_object(raw, what="pairing request", limit=limits.public_body_bytes)
        except ExoError as exc:
            return _fail(exc)
        if not isinstance(data.get("code"), str) or len(data["code"]) > 64:
            return _bad("'code' must be the short code shown by `exo pair`")
        want = data.get("want", "cookie")
        if want not in ("cookie", "token"):
            return _bad("'want' is 'cookie' (a browser) or 'token' (a terminal client)")
        try:
            codes.redeem(data["code"], source=source_key(request.remote or ""))
        except ExoError as exc:
            return _fail(exc)
        if want == "token":
            return web.json_response({"ok": True, "token": token}, headers={"Cache-Control": "no-store"})
        cookie, csrf = auth.mint()
        return web.json_response(
            {"ok": True, "csrf": csrf}, headers={"Set-Cookie": auth.cookie_header(cookie), "Cache-Control": "no-store"}
        )

    async def session(request: web.Request) -> web.Response:
        sid = request.get("web_session")
        return web.json_response(
            {"ok": True, "csrf": auth.csrf_for(sid) if sid else None, "via": "cookie" if sid else "bearer"},
            headers={"Cache-Control": "no-store"},
        )

    async def logout(request: web.Request) -> web.Response:
        # Ended on the server, not only in this browser: a copy of the cookie stops working too.
        sid = request.get("web_session")
        revoked = await asyncio.to_thread(auth.revoke, sid) if sid else False
        return web.json_response({"ok": True, "revoked": revoked}, headers={"Set-Cookie": auth.cookie_header()})

    async def store(request: web.Request) -> web.Response:
        # The read-only store browser: the pack and node list, or one node (?id=) and what links to it.
        node_id = request.query.get("id", "") if request.path == "/web/store/node" else None
        try:
            return web.json_response(await asyncio.to_thread(_store_view, store_root, node_id))
        except ExoError as exc:
            return _fail(exc)

    def add(app: web.Application) -> None:
        for path, handler in (
            ("/", page),
            ("/index.html", page),
            ("/static/{name}", page),
            ("/web/session", session),
            ("/web/store", store),
            ("/web/store/node", store),
        ):
            app.router.add_get(path, handler)
        app.router.add_post("/pair", pair)
        app.router.add_post("/web/logout", logout)

    return add


def unix_routes(codes: PairingCodes, addresses: tuple[str, ...]) -> Any:
    """A route adder for the owner-only Unix socket: ``POST /pair/new``."""

    async def new_code(request: web.Request) -> web.Response:
        if not addresses:
            return _bad("exod is not listening on TCP; start it with `exo serve --tcp HOST:PORT` to pair a laptop", 409)
        issued = codes.issue()
        return web.json_response(
            {"ok": True, "code": issued.code, "expires_in": issued.expires_in, "addresses": list(addresses)},
            headers={"Cache-Control": "no-store"},
        )

    def add(app: web.Application) -> None:
        app.router.add_post("/pair/new", new_code)

    return add


def _node_wire(node: Node, *, body: bool = False) -> dict[str, Any]:
    wire = {
        "id": node.id,
        "title": node.title,
        "type": node.type,
        "domain": node.domain,
        "summary": node.summary,
        "confidence": node.confidence,
        "valid_from": node.valid_from,
        "valid_until": node.valid_until,
        "sources": list(node.sources),
        "tags": list(node.tags),
        "private": node.private,
        "links": [{"type": ln.type, "target": ln.target} for ln in node.links],
    }
    return {**wire, "body": node.body} if body else wire


def _store_view(store_root: Path | None, node_id: str | None) -> dict[str, Any]:
    store = open_store(store_root)
    if node_id is None:
        nodes = sorted(store.nodes(), key=lambda n: n.id)
        return {"ok": True, "pack": store.pack_text(), "nodes": [_node_wire(n) for n in nodes]}
    node = store.read_node(node_id)
    linked_here = [n.id for n in store.nodes() if any(ln.target == node_id for ln in n.links)]
    return {"ok": True, "node": _node_wire(node, body=True), "linked_from": linked_here}
