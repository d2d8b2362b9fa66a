"""The ``exo`` command.

Each subcommand lives in its own module under :mod:`exo_core.cli` and exposes
``register(subparsers)``. Those modules import only argparse at module level so
``exo --help`` stays fast on a small board; the work is imported inside each
handler. The installed edge (:mod:`exo_core.edge`) adds its own subcommands
(``exo models``) the same way, from modules of its own.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from exo_core.cli.examples import add_examples
from exo_core.edge import edge_or_installed
from exo_core.errors import ExoError
from exo_core.private_files import restrict_umask
from exo_core.seams.edge import EdgeKit

__all__ = ["main", "build_parser"]

# Modules under exo_core.cli that register subcommands, in help order.
# A module missing here is simply not offered.
COMMAND_MODULES: tuple[str, ...] = (
    "init_cmd",
    "serve_cmd",
    "chat_cmd",
    "pair_cmd",
    "search_cmd",
    "history_cmd",
    "protocol_cmd",
    "store_cmd",
    "onboard_cmd",
    "ledger_cmd",
    "gate_cmd",
    "device_cmd",
    "recall_cmd",
    "bench_cmd",
    "learn_cmd",
    "decide_cmd",
)


def build_parser(*, edge: EdgeKit | None = None, command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand, the edge's (default: the installed one) last.

    With ``command`` (the subcommand about to run), the modules are registered
    in order only until one of them has added it: ``exo serve`` neither imports
    nor builds the other commands' parsers, which exod would otherwise hold for
    its whole life (idle exod's budget, docs/benchmarks.md §2). A name no
    module adds gets the full parser, and with it argparse's usual error.
    """
    parser = argparse.ArgumentParser(prog="exo", description="Exo: a personal assistant core.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    core_modules = [f"exo_core.cli.{name}" for name in COMMAND_MODULES]
    edge_modules = list(edge_or_installed(edge).commands)
    for module_name in core_modules + edge_modules:
        module = importlib.import_module(module_name)
        module.register(sub)
        if command is not None and command in sub.choices:
            break
    add_examples(parser)
    return parser


def main(argv: Sequence[str] | None = None, *, edge: EdgeKit | None = None) -> int:
    """Run ``exo``; returns the process exit status."""
    # Everything exo and exod create is the person's alone, whatever the shell's umask
    # (docs/security.md, "Private files"): SQLite side files and library temp files included.
    restrict_umask()
    raw = list(sys.argv[1:] if argv is None else argv)
    # The command is the first argument (``exo`` itself takes no option but --help).
    parser = build_parser(edge=edge, command=raw[0] if raw and not raw[0].startswith("-") else None)
    # Commands that hand their remaining arguments to another program (``exo bench footprint --json``)
    # set ``passthrough``; argparse alone would refuse options it does not know.
    args, extra = parser.parse_known_args(raw)
    token = getattr(args, "passthrough", None)
    if token:
        # Everything after the subcommand's name belongs to the program it runs, in order.
        args.args = raw[raw.index(token) + 1 :]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        result = args.handler(args)
    except ExoError as exc:
        print(f"exo: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
