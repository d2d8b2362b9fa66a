"""``exo onboard``: answer the onboarding interview from the terminal.

The interview runs inside exod (``store.onboard``); this is a protocol client
like the web page or the device: it prints each ``question.asked`` with its
numbered options and answers with ``question.answer`` (a number picks an
option, anything else is text). Another client may answer a question first;
the first answer wins. Without a running exod one is started for the command,
with no model: the interview needs none.
"""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, home_of


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo onboard``."""
    parser = add_command(
        sub, "onboard", _onboard, "an interview that writes a new person's pack and first nodes", home=True
    )
    parser.add_argument("--force", action="store_true", help="write even over an edited pack or existing nodes")
    parser.add_argument("--no-spawn", action="store_true", help="fail if no exod is running instead of starting one")


def _onboard(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_interview(args))


async def _interview(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from exo_core.cli.spawn import local_core
    from exo_core.client import ExoClient
    from exo_core.errors import BadBodyError, BrokenResourceError, ConflictError, NotFoundError, UsageError

    home = home_of(args)
    async with (
        local_core(home, model="none", spawn=not args.no_spawn) as url,
        ExoClient(url, client_name="exo-onboard") as client,
    ):
        session = await client.open_session(title="Onboarding")
        started = await client.request("store.onboard", {"session": session, "force": args.force})
        print(f"Onboarding {started['store']}: answer with a number or type your answer.")
        # The interview lives in exod's memory: if exod goes away it is lost, so stop instead of reconnecting.
        async for event in client.events(session=session, reconnect=False):
            body = event.body
            if event.type == "notice":
                print(f"  {body.get('text', '')}")
            elif event.type == "ui.panel" and body.get("kind") == "onboarding":
                data = body.get("data") or {}
                if not data.get("ok"):
                    print(f"onboarding stopped: {data.get('error')}", file=sys.stderr)
                    return 1
                print(f"\nwrote {len(data.get('written', []))} files into {data.get('store')}")
                return 0
            elif event.type == "question.asked":
                options = body.get("options") or []
                print(f"\n{body.get('text', '')}")
                for number, option in enumerate(options, start=1):
                    print(f"  {number}. {option}")
                while True:
                    line = await asyncio.to_thread(sys.stdin.readline)
                    if not line:
                        raise UsageError("input ended before the interview finished; nothing was written")
                    reply = line.strip()
                    pick = {"option": int(reply)} if reply.isdigit() and options else {"text": reply}
                    try:
                        await client.request("question.answer", {"question_id": body["question_id"], **pick})
                        break
                    except BadBodyError as exc:
                        hint = f"choose 1 to {len(options)}" if options else "type an answer"
                        print(f"  {exc.message} ({hint})")
                    except (ConflictError, NotFoundError):
                        print("  (answered elsewhere)")
                        break
    raise BrokenResourceError("exod stopped during the interview; nothing was written. Run 'exo onboard' again")
