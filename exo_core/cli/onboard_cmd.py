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
from typing import TYPE_CHECKING, Any

from exo_core.cli.args import add_command, home_of

if TYPE_CHECKING:
    import asyncio

__all__ = ["register", "TYPED_AHEAD"]

# Lines typed (or piped) ahead of the questions they answer, kept until asked. The interview asks a
# handful of questions and a refused answer keeps its question open, so more lines than this can never
# all be used: past it the command stops with a UsageError, having written nothing (nothing is dropped).
TYPED_AHEAD = 256


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

    from exo_core.cli.spawn import local_core
    from exo_core.client import ExoClient
    from exo_core.errors import BrokenResourceError

    home = home_of(args)
    async with (
        local_core(home, model="none", spawn=not args.no_spawn) as url,
        ExoClient(url, client_name="exo-onboard") as client,
    ):
        session = await client.open_session(title="Onboarding")
        started = await client.request("store.onboard", {"session": session, "force": args.force})
        print(f"Onboarding {started['store']}: answer with a number or type your answer.")
        # Events and typed lines arrive on one queue: a question answered on another screen is dropped
        # here at once, instead of waiting for a line typed for it (docs/store.md, onboarding).
        inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=256)
        _read_lines_into(inbox, asyncio.get_running_loop())
        follower = asyncio.create_task(_follow(client, session, inbox))
        try:
            return await _converse(client, inbox)
        finally:
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)
    raise BrokenResourceError("exod stopped during the interview; nothing was written. Run 'exo onboard' again")


def _read_lines_into(inbox: asyncio.Queue[tuple[str, Any]], loop: asyncio.AbstractEventLoop) -> None:
    """Read stdin in a daemon thread (a blocked read never holds the exit), each line into ``inbox``."""
    import asyncio
    import concurrent.futures
    import sys
    import threading

    def pump() -> None:
        while True:
            line = sys.stdin.readline()
            # The inbox is bounded: while it is full this thread waits (and a piped writer with it)
            # instead of a line being dropped; when the command is over, the wait ends with it.
            try:
                asyncio.run_coroutine_threadsafe(inbox.put(("line", line)), loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):
                return  # the loop closed or cancelled the put: the interview is over, nobody reads
            if not line:
                return

    threading.Thread(target=pump, name="exo-onboard-stdin", daemon=True).start()


async def _follow(client: Any, session: str, inbox: asyncio.Queue[tuple[str, Any]]) -> None:
    """The session's events into ``inbox``; then ``gone`` (the interview lives in exod: no reconnecting)."""
    from exo_core.errors import ExoError

    try:
        async for event in client.events(session=session, reconnect=False):
            await inbox.put(("event", event))
    except ExoError:
        pass  # the link broke: reported as "gone" below
    await inbox.put(("gone", None))


async def _converse(client: Any, inbox: asyncio.Queue[tuple[str, Any]]) -> int:
    """Print questions and answer the open one with the next typed line; drop one answered elsewhere.

    Lines typed before a question is asked (or piped in) wait for the next question, in order.
    """
    import collections
    import sys

    from exo_core.errors import BrokenResourceError, UsageError
    from exo_core.store.onboard import QUESTIONS

    open_question: dict[str, Any] | None = None
    answered_here: set[str] = set()
    typed: collections.deque[str] = collections.deque()  # bounded at TYPED_AHEAD: more is refused, not dropped
    ended = False
    while True:
        kind, item = await inbox.get()
        if kind == "gone":
            raise BrokenResourceError("exod stopped during the interview; nothing was written. Run 'exo onboard' again")
        if kind == "line":
            if not item:
                ended = True
            elif len(typed) >= TYPED_AHEAD:
                raise UsageError(
                    f"more than {TYPED_AHEAD} lines were typed before the questions they answer; the interview asks "
                    f"{len(QUESTIONS)} questions, one line each. Nothing was written: run 'exo onboard' again"
                )
            else:
                typed.append(item)
        elif item.type == "notice":
            print(f"  {item.body.get('text', '')}")
        elif item.type == "ui.panel" and item.body.get("kind") == "onboarding":
            data = item.body.get("data") or {}
            if not data.get("ok"):
                print(f"onboarding stopped: {data.get('error')}", file=sys.stderr)
                return 1
            print(f"\nwrote {len(data.get('written', []))} files into {data.get('store')}")
            return 0
        elif item.type == "question.asked":
            open_question = item.body
            print(f"\n{open_question.get('text', '')}")
            for number, option in enumerate(open_question.get("options") or [], start=1):
                print(f"  {number}. {option}")
        elif item.type == "question.answered":
            question_id = item.body.get("question_id")
            is_open = open_question is not None and open_question.get("question_id") == question_id
            if is_open and question_id not in answered_here:
                shown = item.body.get("option") or item.body.get("text") or ""
                print(f"  (answered on another screen: {shown})")
                open_question = None
        while open_question is not None and typed:
            if await _answer(client, open_question, typed.popleft()):
                answered_here.add(open_question["question_id"])
                open_question = None
        if open_question is not None and ended:
            raise UsageError("input ended before the interview finished; nothing was written")


async def _answer(client: Any, question: dict[str, Any], line: str) -> bool:
    """Answer ``question`` with one typed line; False when it was refused and the question stays open."""
    from exo_core.errors import BadBodyError, ConflictError, NotFoundError

    reply = line.strip()
    options = question.get("options") or []
    pick = {"option": int(reply)} if reply.isdigit() and options else {"text": reply}
    try:
        await client.request("question.answer", {"question_id": question["question_id"], **pick})
    except BadBodyError as exc:
        hint = f"choose 1 to {len(options)}" if options else "type an answer"
        print(f"  {exc.message} ({hint})")
        return False
    except (ConflictError, NotFoundError):
        print("  (already answered on another screen)")
    return True
