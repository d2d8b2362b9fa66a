"""Run the ``exo`` subcommands of this package in a child process.

Builds the parser from this package's command modules only, with the same
error handling as ``exo_core.cli.main`` (which also imports the other
engineers' command modules); usage: python exo_cli.py ARGS...
"""

from __future__ import annotations

import argparse
import sys

from exo_core.cli import onboard_cmd, store_cmd
from exo_core.errors import ExoError


def main() -> int:
    parser = argparse.ArgumentParser(prog="exo")
    sub = parser.add_subparsers(dest="command")
    store_cmd.register(sub)
    onboard_cmd.register(sub)
    args = parser.parse_args(sys.argv[1:])
    try:
        return int(args.handler(args) or 0)
    except ExoError as exc:
        print(f"exo: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
