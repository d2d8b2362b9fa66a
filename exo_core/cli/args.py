"""What the ``exo`` subcommands share when they declare themselves: a command with its handler, a group of actions.

Imports only argparse, like every command module, so ``exo --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exo_core.seams.home import ExoHome

__all__ = ["add_command", "add_group", "home_of", "emit", "HOME_HELP"]

HOME_HELP = "Exo home (default $EXO_HOME or ~/.exo)"


def add_command(
    sub: Any, name: str, handler: Callable[[argparse.Namespace], int], help: str, *, home: bool = False
) -> argparse.ArgumentParser:
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


def home_of(args: argparse.Namespace) -> ExoHome:
    """The Exo home ``--home`` names (else $EXO_HOME or ~/.exo)."""
    from exo_core.seams.home import ExoHome

    return ExoHome.from_env(args.home)


def emit(args: argparse.Namespace, data: object, text: str) -> int:
    """Print ``data`` as JSON with ``--json``, else ``text``; returns 0, the exit status."""
    import json

    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text, flush=True)
    return 0
