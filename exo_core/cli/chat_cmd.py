"""``exo chat``: the line client. Starts a local exod for the chat when none is running."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo chat``."""
    parser = sub.add_parser("chat", help="chat with the core (line client)")
    parser.add_argument("--home", default=None)
    parser.add_argument("--connect", default=None, metavar="URL", help="remote core: http://HOST:PORT")
    parser.add_argument("--token-file", default=None, help="file holding the remote core's bearer token")
    parser.add_argument("--session", default=None, help="continue this session")
    parser.add_argument("--model", default=None, help="model spec for a local exod started by chat")
    parser.add_argument("--approve", choices=("ask", "allow", "deny"), default=None,
                        help="how to answer approvals (default: ask on a terminal, deny otherwise)")
    parser.add_argument("--no-spawn", action="store_true", help="fail instead of starting a local exod")
    parser.set_defaults(handler=_chat)


def _chat(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from exo_core.cli.spawn import local_core
    from exo_core.client import ExoClient
    from exo_core.client.linechat import LineChat, stdin_lines
    from exo_core.errors import ConfigError
    from exo_core.home import ExoHome

    interactive = sys.stdin.isatty()
    approve = args.approve or ("ask" if interactive else "deny")

    async def main() -> int:
        home = ExoHome.from_env(args.home)
        if args.connect:
            token = None
            if args.token_file:
                try:
                    with open(args.token_file, encoding="ascii") as fh:
                        token = fh.read().strip()
                except OSError as exc:
                    raise ConfigError(f"cannot read token file {args.token_file}: {exc.strerror}") from exc
            async with ExoClient(args.connect, token=token, client_name="exo-chat") as client:
                return await _run(client)
        async with local_core(home, model=args.model, spawn=not args.no_spawn) as url:
            async with ExoClient(url, client_name="exo-chat") as client:
                return await _run(client)

    async def _run(client: ExoClient) -> int:
        chat = LineChat(client, approve=approve, interactive=interactive)
        session = await chat.start(args.session)
        print(f"session {session} — /help for commands", flush=True)
        lines: asyncio.Queue[str | None] = asyncio.Queue(maxsize=1000)
        stdin_lines(asyncio.get_running_loop(), lines, sys.stdin)
        await chat.run(lines)
        return 0

    return asyncio.run(main())
