"""``exo init``: a new Exo home and a store folder copied from ``store_template/``."""

from __future__ import annotations

import argparse

from typing import TYPE_CHECKING

from exo_core.cli.args import add_command, home_of

if TYPE_CHECKING:
    from exo_core.home import ExoHome


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo init``."""
    parser = add_command(sub, "init", _init, "create an Exo home and a new store from the template", home=True)
    parser.add_argument("--store", default=None, help="store folder (default <home>/store)")
    parser.add_argument("--model", default=None, help="model spec to record in config.toml")


def _init(args: argparse.Namespace) -> int:
    from exo_core.bootstrap import init_home

    home = home_of(args)
    done = init_home(home, store=args.store, model=args.model)
    print("\n".join(done))
    print(_pin_owner(home, created=any(line.startswith("created store") for line in done)))
    return 0


def _pin_owner(home: "ExoHome", *, created: bool) -> str:
    """Pin the store's owner key outside the store; one line saying what was done.

    See docs/security.md, "The ledger's trust anchor".
    """
    from exo_core.ledger import MachineTrust, load_signing_key
    from exo_core.store.trust import pin_home_store

    signer = load_signing_key(home.keys_dir)
    return pin_home_store(MachineTrust(home.root, machine_key=signer.key_id), home.store_path(), created=created)
