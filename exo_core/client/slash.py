"""The ``/`` commands both chat clients run against the core: the line client and the terminal."""

from __future__ import annotations

from exo_core.client.client import ExoClient
from exo_core.errors import UsageError

__all__ = ["SESSION_COMMANDS", "session_command", "help_text"]

SESSION_COMMANDS: dict[str, str] = {
    "help": "this list",
    "quit": "leave (exod keeps running)",
    "interrupt": "stop the running turn",
    "undo": "[N] remove the last N turns",
    "fork": "continue in a copy of this session",
    "resume": "repair and continue after a core restart",
    "search": "WORDS  search past sessions",
    "sessions": "list sessions",
    "switch": "ID  open another session",
    "new": "start a new session",
    "taste": "learned taste rows",
}


def help_text(commands: dict[str, str]) -> str:
    """One line per command: its name and what it does."""
    return "\n".join(f"/{name:<10} {what}" for name, what in commands.items())


async def session_command(client: ExoClient, session: str, name: str, rest: str, *, title: str) -> tuple[str, str]:
    """Run ``/name rest`` in ``session``: what to show, and the session to be in afterwards.

    ``/new`` creates a session called ``title``. A name that is not a session command
    (``/help`` and ``/quit`` are the client's own) is a :class:`UsageError`.
    """
    if name == "interrupt":
        await client.request("turn.interrupt", {"session": session})
        return "", session
    if name == "undo":
        result = await client.request("session.undo", {"session": session, "turns": int(rest) if rest.isdigit() else 1})
        if not result["undone_turns"]:
            return "nothing to undo", session
        return str(result.get("said") or f"undid turns {', '.join(result['undone_turns'])}"), session
    if name in ("fork", "new"):
        result = await (
            client.request("session.fork", {"session": session})
            if name == "fork"
            else client.request("session.create", {"title": title})
        )
        return f"now in session {result['session']['id']}", str(result["session"]["id"])
    if name == "switch" and rest:
        await client.request("session.get", {"session": rest, "messages": False})
        return f"now in session {rest}", rest
    if name == "resume":
        return str(await client.request("session.resume", {"session": session})), session
    if name == "search":
        hits = (await client.request("search", {"query": rest}))["hits"]
        return "\n".join(
            f"{h['session']} #{h['message_id']} {h['role']}: {' '.join(h['snippet'].split())}" for h in hits
        ) or "no matches", session
    if name == "sessions":
        listed = (await client.request("session.list", {}))["sessions"]
        return "\n".join(f"{'*' if s['id'] == session else ' '} {s['id']} {s['title']}" for s in listed), session
    if name == "taste":
        rows = (await client.request("taste.list", {}))["rows"]
        text = "\n".join(f"{r['weight']:.2f}  {r['text']}  ({r['id']})" for r in rows)
        return text or "no taste learned yet", session
    raise UsageError(f"unknown or incomplete command /{name}; /help lists them")
