"""``exo init``: a new Exo home and a store folder copied from ``store_template/``."""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, home_of


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo init``."""
    parser = add_command(sub, "init", _init, "create an Exo home and a new store from the template", home=True)
    parser.add_argument("--store", default=None, help="store folder (default <home>/store)")
    parser.add_argument("--model", default=None, help="model spec to record in config.toml")


def _init(args: argparse.Namespace) -> int:
    from exo_core.bootstrap import init_home

    print("\n".join(init_home(home_of(args), store=args.store, model=args.model)))
    return 0
