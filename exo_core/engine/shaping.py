"""Capability shaping: each client gets output it can show (docs/web.md).

A client announces what it can draw in ``hello``; the engine remembers a
:class:`ClientProfile` under a ``client_id`` it returns, and an event stream
opened with ``?client=<client_id>`` is shaped to that profile:

* ``panel`` (``can_draw``: the web page) — events pass unchanged;
* ``line`` (a terminal: columns, no drawing) — a ``ui.panel`` becomes one
  compact line cut to the screen width;
* ``card`` (a small screen with buttons) — a ``ui.panel`` becomes a card of at
  most ``screen_rows`` short lines;
* ``spoken`` (voice out, no screen) — a ``ui.panel`` becomes one sentence.

Only the body's ``data`` of ``ui.panel`` changes (to ``{"form": ..., ...}``);
``seq``, ``id`` and order never do, so two clients on one session still see
the same events in the same order, and two clients with the same profile get
byte-identical streams. A stream without ``client`` is never shaped.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from exo_core.protocol import canonical_json
from exo_core.protocol.commands import Capabilities

__all__ = ["ClientProfile", "ClientRegistry", "profile_for", "shape_data", "panel_summary"]

_MAX_CLIENTS = 256


@dataclass(frozen=True, slots=True)
class ClientProfile:
    """How one client is served: its form and screen size in characters."""

    client_id: str
    name: str
    form: str
    columns: int
    rows: int


def profile_for(name: str, caps: Capabilities) -> ClientProfile:
    """The profile that fits ``caps``.

    The id is a hash of it, so a client saying hello again after a restart keeps its id.
    """
    columns = caps.screen_columns or 0
    rows = caps.screen_rows or 0
    if caps.can_draw:
        form = "panel"
    elif columns and caps.buttons and rows and rows <= 8:
        form = "card"
    elif caps.voice_out and not columns:
        form = "spoken"
    else:
        form = "line"
    key = canonical_json({"name": name, "form": form, "columns": columns, "rows": rows})
    client_id = "cl_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return ClientProfile(client_id, name, form, columns or 80, rows or 2)


class ClientRegistry:
    """Profiles of the clients that said hello (bounded; the oldest are forgotten)."""

    def __init__(self) -> None:
        self._profiles: OrderedDict[str, ClientProfile] = OrderedDict()

    def remember(self, name: str, caps: Capabilities) -> ClientProfile:
        """Record a client's profile and return it."""
        profile = profile_for(name, caps)
        self._profiles[profile.client_id] = profile
        self._profiles.move_to_end(profile.client_id)
        while len(self._profiles) > _MAX_CLIENTS:
            self._profiles.popitem(last=False)
        return profile

    def get(self, client_id: str | None) -> ClientProfile | None:
        """The profile for ``client_id``, if this core has seen it."""
        return self._profiles.get(client_id) if client_id else None


def panel_summary(kind: str, data: dict[str, Any]) -> str:
    """A few words saying what a panel holds (for lines, cards and speech)."""
    if kind == "diff":
        text = str(data.get("diff", ""))
        added = sum(1 for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in text.splitlines() if ln.startswith("-") and not ln.startswith("---"))
        return f"{data.get('path') or data.get('file') or ''} +{added} -{removed}".strip()
    if kind == "file_preview":
        return str(data.get("path", ""))
    for key in ("rows", "items", "sessions", "nodes"):
        value = data.get(key)
        if isinstance(value, list):
            return f"{len(value)} {key}"
    for key in ("summary", "text"):
        if isinstance(data.get(key), str):
            return " ".join(str(data[key]).split())
    return ""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def shape_data(data: str, profile: ClientProfile | None) -> str:
    """The event JSON text ``data`` as ``profile`` should receive it."""
    if profile is None or profile.form == "panel" or '"ui.panel"' not in data:
        return data
    event = json.loads(data)
    if event.get("type") != "ui.panel":
        return data
    body = event.get("body") or {}
    kind = str(body.get("kind", "panel"))
    title = str(body.get("title", ""))
    raw = body.get("data")
    summary = panel_summary(kind, raw if isinstance(raw, dict) else {})
    if profile.form == "card":
        lines = [_cut(title or kind, profile.columns), _cut(summary, profile.columns)]
        shaped: dict[str, Any] = {"form": "card", "lines": [ln for ln in lines if ln][: max(1, profile.rows)]}
    elif profile.form == "spoken":
        spoken = f"I opened a {kind.replace('_', ' ')} panel" + (f": {title}" if title else "")
        shaped = {"form": "spoken", "text": spoken + (f". {summary}." if summary else ".")}
    else:
        line = f"[{kind}] {title}" + (f" — {summary}" if summary else "")
        shaped = {"form": "line", "line": _cut(line, profile.columns)}
    event["body"] = {**body, "data": shaped}
    return canonical_json(event)
