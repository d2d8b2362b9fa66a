"""``exo onboard``: the onboarding interview in a terminal.

The interview itself is :mod:`exo_core.store.onboard` (a protocol-shaped state
machine); this is only a line driver for it: it prints each question with
numbered options and reads a number or free text.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo onboard``."""
    parser = sub.add_parser("onboard", help="an interview that writes a new person's pack and first nodes")
    parser.add_argument("--home", default=None, help="Exo home (default $EXO_HOME or ~/.exo)")
    parser.add_argument("--store", default=None, help="store folder (default: the home's store)")
    parser.add_argument("--force", action="store_true", help="write even over an edited pack or existing nodes")
    parser.set_defaults(handler=_onboard)


def _onboard(args: argparse.Namespace) -> int:
    import sys

    from exo_core.errors import BadBodyError, NotFoundError, UsageError
    from exo_core.home import ExoHome
    from exo_core.store.onboard import Answer, answer, apply_plan, next_question, plan, start
    from exo_core.store.store import Store

    home = ExoHome.from_env(args.home)
    store = Store.open(home.store_path(args.store))
    state = start()
    while (question := next_question(state)) is not None:
        print(f"\n{question.text}")
        for number, option in enumerate(question.options, start=1):
            print(f"  {number}. {option}")
        while True:
            line = sys.stdin.readline()
            if not line:
                raise UsageError("input ended before the interview finished; nothing was written")
            reply = line.strip()
            if reply.isdigit() and question.options:
                candidate = Answer(question.question_id, option=int(reply))
            else:
                candidate = Answer(question.question_id, text=reply)
            try:
                state = answer(state, candidate)
                break
            except BadBodyError as exc:
                hint = f"choose 1 to {len(question.options)}" if question.options else "type an answer"
                print(f"  {exc.message} ({hint})")
    ledger = None
    try:
        from exo_core.ledger import load_signing_key
        from exo_core.store.ledger_bridge import open_ledger

        ledger = open_ledger(store.root, signer=load_signing_key(home.keys_dir))
    except NotFoundError:
        print("note: no ledger key or ledger here; your answers are not recorded in the ledger")
    try:
        written = apply_plan(store, plan(state), ledger=ledger, force=args.force)
    finally:
        if ledger is not None:
            ledger.close()
    print(f"\nwrote {len(written)} files into {store.root}")
    return 0

