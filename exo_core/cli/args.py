"""What the ``exo`` subcommands share when they declare themselves: a command with its handler, a group of actions.

Imports only argparse, like every command module, so ``exo --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_command", "add_group", "HOME_HELP"]

HOME_HELP = "Exo home (default $EXO_HOME or ~/.exo)"


def add_command(sub: Any, name: str, handler: Callable[[argparse.Namespace], int], help: str, *,
                home: bool = False) -> argparse.ArgumentParser:
    """A subcommand that runs ``handler``; with ``home``, it takes ``--home``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    parser.set_defaults(handler=handler)
    if home:
        parser.add_argument("--home", default=None, help=HOME_HELP)
    return parser


def add_group(sub: Any, name: str, help: str, *, metavar: str = "ACTION") -> Any:
    """A command whose actions are subcommands (``exo ledger verify``); one of them is required."""
    actions = sub.add_parser(name, help=help).add_subparsers(dest=f"{name}_command", metavar=metavar)
    actions.required = True
    return actions
