"""``exo history``: import past conversations, and see or run their summaries.

* ``exo history import FILE`` reads a ChatGPT ``conversations.json`` or a JSON
  lines export into new sessions (searchable at once with ``exo search``).
  When exod is running it is told (``session.resume`` per session) and
  summarizes them in its import lane; otherwise they are summarized here,
  unless ``--no-summarize`` leaves them for exod's next start.
* ``exo history summarize`` runs the pending import summaries here (after an
  interrupted or ``--no-summarize`` import, with exod stopped).
* ``exo history status`` counts summary nodes by lane and status.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING

from exo_core.cli.args import add_command, add_group, emit, home_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from exo_core.context.config import ContextConfig
    from exo_core.context.engine import SummaryTreeContext
    from exo_core.seams.home import ExoHome
    from exo_core.sessions import DbWorker


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo history``."""
    actions = add_group(sub, "history", "import past conversations; summary status")
    imp = add_command(
        actions, "import", _import, "import a chat export (ChatGPT conversations.json or JSON lines)", home=True
    )
    imp.add_argument("file")
    imp.add_argument("--no-summarize", action="store_true", help="leave the summaries for exod's next start")
    summ = add_command(actions, "summarize", _summarize, "run pending import summaries in this process", home=True)
    status = add_command(actions, "status", _status, "summary nodes by lane and status", home=True)
    for p in (imp, summ, status):
        p.add_argument("--json", action="store_true")
    for p in (imp, summ):
        p.add_argument("--summarizer", default=None, help="model spec (default: [context] summarizer, else the model)")
        p.add_argument("--model", default=None, help="the main model spec, used when no summarizer is set")


def _import(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from exo_core.cli.spawn import exod_running
    from exo_core.client import ExoClient
    from exo_core.context.importer import import_conversations, parse_export

    home = home_of(args)
    conversations = parse_export(Path(args.file))

    async def main() -> int:
        running = await exod_running(home)
        summarize_here = not running and not args.no_summarize
        async with _parts(home, args, with_engine=summarize_here) as (worker, engine, config):
            report = await import_conversations(worker, conversations, engine=engine, config=config)
            if running and report.session_ids:  # exod summarizes what it is told to resume
                async with ExoClient(f"unix://{home.socket_path}", client_name="exo-history") as client:
                    for session_id in report.session_ids:
                        await client.request("session.resume", {"session": session_id})
            if engine is not None:
                await engine.lanes.wait_all_idle("import")
        if running:
            where, summaries = "exod is summarizing them", "exod"
        elif summarize_here:
            where, summaries = "summarized", "done"
        else:
            where, summaries = "summaries left for exod's next start", "pending"
        return emit(
            args,
            {
                "conversations": report.conversations,
                "imported": report.imported,
                "skipped": report.skipped,
                "messages": report.messages,
                "sessions": list(report.session_ids),
                "summaries": summaries,
            },
            f"imported {report.imported} conversation(s), {report.messages} message(s); "
            f"{report.skipped} already imported; {where}",
        )

    return asyncio.run(main())


def _summarize(args: argparse.Namespace) -> int:
    import asyncio

    from exo_core.cli.spawn import exod_running
    from exo_core.errors import ConflictError

    home = home_of(args)

    async def main() -> int:
        if await exod_running(home):
            raise ConflictError("exod is running and summarizes imports itself; stop it to summarize here")
        async with _parts(home, args, with_engine=True) as (_, engine, _config):
            assert engine is not None
            engine.lanes.kick("import")
            await engine.lanes.wait_all_idle("import")
            stats = engine.stats()["lanes"]["import"]
        return emit(
            args,
            {"ran": stats["started"], "failed": stats["failed"]},
            f"ran {stats['started']} import summaries ({stats['failed']} failed)",
        )

    return asyncio.run(main())


def _status(args: argparse.Namespace) -> int:
    from exo_core.errors import NotFoundError
    from exo_core.sessions import open_reader

    home = home_of(args)
    if not home.sessions_db.exists():
        raise NotFoundError(f"no sessions yet at {home.sessions_db}")
    with contextlib.closing(open_reader(home.sessions_db)) as conn:
        rows = conn.execute("SELECT lane, status, COUNT(*) FROM summary_nodes GROUP BY lane, status").fetchall()
    counts = {f"{lane}.{status}": n for lane, status, n in rows}
    return emit(args, counts, "\n".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no summaries")


@contextlib.asynccontextmanager
async def _parts(
    home: ExoHome, args: argparse.Namespace, *, with_engine: bool
) -> AsyncIterator[tuple[DbWorker, SummaryTreeContext | None, ContextConfig]]:
    """The database (and, to summarize here, a context engine) for one command."""
    from exo_core.context.config import ContextConfig
    from exo_core.sessions import DbWorker

    config = ContextConfig.from_config(home.config())
    engine: SummaryTreeContext | None = None
    async with DbWorker(home.sessions_db) as worker:
        # exod may be running: only its connection checkpoints the WAL (see sessions/db.py).
        await worker.run(lambda: worker.connection.execute("PRAGMA wal_autocheckpoint=0"))
        if with_engine:
            from exo_core.context.engine import SummaryTreeContext
            from exo_core.context.summarizer import resolve_summarizer
            from exo_core.engine.models import model_spec, resolve_model

            summarizer = resolve_summarizer(home, args.summarizer)
            if summarizer is None:
                summarizer = resolve_model(home, model_spec(home, args.model))
            engine = SummaryTreeContext(worker=worker, summarizer=summarizer, config=config)
        try:
            yield worker, engine, config
        finally:
            if engine is not None:
                await engine.close()
