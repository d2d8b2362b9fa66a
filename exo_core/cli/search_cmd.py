"""``exo search QUERY``: full-text search over past sessions (reads sessions.sqlite directly)."""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, emit, home_of


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo search``."""
    parser = add_command(sub, "search", _search, "search past sessions' messages, tool calls and results", home=True)
    parser.add_argument("query", nargs="+")
    parser.add_argument("--session", default=None)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--json", action="store_true")


def _search(args: argparse.Namespace) -> int:
    import contextlib

    from exo_core.errors import NotFoundError
    from exo_core.sessions import SessionStore, open_reader

    home = home_of(args)
    if not home.sessions_db.exists():
        if not home.config_path.exists():
            raise NotFoundError(f"no Exo home at {home.root}; run `exo init` first")
        return emit(args, [], f"no sessions yet at {home.sessions_db}: nothing to search until you chat (`exo chat`)")
    with contextlib.closing(open_reader(home.sessions_db)) as conn:
        hits = SessionStore(conn).search(" ".join(args.query), limit=args.limit, session_id=args.session)
    query = " ".join(args.query)
    text = "\n".join(f"{h.session_id} #{h.message_id} {h.role}: {h.snippet}" for h in hits)
    if not hits:
        where = f" in session {args.session}" if args.session else ""
        text = f"no messages match {query!r}{where}; try fewer or other words"
    return emit(
        args,
        [{"session": h.session_id, "message_id": h.message_id, "role": h.role, "snippet": h.snippet} for h in hits],
        text,
    )
