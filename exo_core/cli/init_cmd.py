"""``exo init``: a new Exo home and a store folder copied from ``store_template/``.

The home's board profile (``small``, ``standard``, ``laptop``: model roles,
context size, threads) is ``--board``, else ``$EXO_BOARD``, else picked from
the machine's memory (:mod:`exo_core.models.boards`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from exo_core.cli.args import add_command, home_of

if TYPE_CHECKING:
    from exo_core.seams.home import ExoHome


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo init``."""
    parser = add_command(sub, "init", _init, "create an Exo home and a new store from the template", home=True)
    parser.add_argument("--store", default=None, help="store folder (default <home>/store)")
    parser.add_argument("--model", default=None, help="model spec to record in config.toml")
    parser.add_argument(
        "--board",
        default=None,
        choices=("small", "standard", "laptop"),
        help="board profile (default $EXO_BOARD, else picked from the machine's memory)",
    )


def _init(args: argparse.Namespace) -> int:
    import os

    from exo_core.bootstrap import init_home
    from exo_core.models.boards import detect_board

    home = home_of(args)
    profile, why = detect_board(args.board)
    explicit = bool(args.board or os.environ.get("EXO_BOARD"))
    done = init_home(home, store=args.store, model=args.model, board=profile, explicit_board=explicit)
    print("\n".join([f"board profile {profile.name} ({why})", *done]))
    print(_pin_owner(home, created=any(line.startswith("created store") for line in done)))
    return 0


def _pin_owner(home: ExoHome, *, created: bool) -> str:
    """Pin the store's owner key outside the store; one line saying what was done.

    See docs/security.md, "The ledger's trust anchor".
    """
    from exo_core.ledger import MachineTrust, load_signing_key
    from exo_core.store.trust import pin_home_store

    signer = load_signing_key(home.keys_dir)
    return pin_home_store(MachineTrust(home.root, machine_key=signer.key_id), home.store_path(), created=created)
