"""``exo chat``: the terminal client on a TTY, the line client otherwise.

Starts a local exod for the chat when none is running. ``--connect URL`` talks
to a remote core over TCP with the token from ``--token-file`` or the one
``exo pair --connect URL`` stored.
"""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, home_of


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo chat``."""
    parser = add_command(sub, "chat", _chat, "chat with the core (terminal client; line client when piped)", home=True)
    parser.add_argument("--connect", default=None, metavar="URL", help="remote core: http://HOST:PORT")
    parser.add_argument(
        "--token-file",
        default=None,
        help="file holding the remote core's bearer token (default: the one `exo pair --connect` stored)",
    )
    parser.add_argument("--session", default=None, help="continue this session")
    parser.add_argument("--model", default=None, help="model spec for a local exod started by chat")
    parser.add_argument(
        "--approve",
        choices=("ask", "allow", "deny"),
        default=None,
        help="how to answer approvals (default: ask on a terminal, deny otherwise)",
    )
    parser.add_argument("--no-spawn", action="store_true", help="fail instead of starting a local exod")
    parser.add_argument("--plain", action="store_true", help="the line client even on a terminal")
    parser.add_argument("--event-log", default=None, help=argparse.SUPPRESS)  # seqs shown, for tests and debugging


def _chat(args: argparse.Namespace) -> int:
    import asyncio
    import sys
    from pathlib import Path

    from exo_core.cli.pair_cmd import saved_token_path
    from exo_core.cli.spawn import local_core
    from exo_core.client import ExoClient
    from exo_core.client.linechat import LineChat, stdin_lines
    from exo_core.errors import ConfigError

    interactive = sys.stdin.isatty()
    full_screen = interactive and sys.stdout.isatty() and not args.plain and args.approve in (None, "ask")
    approve = args.approve or ("ask" if interactive else "deny")

    async def main() -> int:
        if not args.connect:
            async with local_core(home_of(args), model=args.model, spawn=not args.no_spawn) as url:
                return await run(url, None)
        token_file = Path(args.token_file or saved_token_path(args.connect))
        try:
            token = token_file.read_text(encoding="ascii").strip() if args.token_file or token_file.exists() else None
        except OSError as exc:
            raise ConfigError(f"cannot read token file {token_file}: {exc.strerror}") from exc
        return await run(args.connect, token)

    async def run(url: str, token: str | None) -> int:
        if full_screen:
            from exo_core.terminal import TerminalChat, load_prefs, terminal_capabilities

            async with ExoClient(
                url, token=token, client_name="exo-terminal", capabilities=terminal_capabilities()
            ) as client:
                return await TerminalChat(
                    client,
                    prefs=load_prefs(),
                    cwd=Path.cwd(),
                    session=args.session,
                    event_log=Path(args.event_log) if args.event_log else None,
                ).run()
        async with ExoClient(url, token=token, client_name="exo-chat") as client:
            # A person at the keyboard answers questions as they answer approvals; piped lines are messages.
            line_chat = LineChat(client, approve=approve, answer_questions=interactive, interactive=interactive)
            print(f"session {await line_chat.start(args.session)} — /help for commands", flush=True)
            lines: asyncio.Queue[str | None] = asyncio.Queue(maxsize=1000)
            stdin_lines(asyncio.get_running_loop(), lines, sys.stdin)
            await line_chat.run(lines)
        return 0

    return asyncio.run(main())
