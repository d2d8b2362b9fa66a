"""``exo protocol export``: write the generated JSON Schema and TypeScript types."""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, add_group


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo protocol``."""
    export = add_command(
        add_group(sub, "protocol", "protocol tools"), "export", _export, "write JSON Schema and TypeScript types"
    )
    export.add_argument("--out", default=None, help="directory (default: exo_core/protocol/generated)")


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from exo_core.protocol.schema import GENERATED_DIR, write_generated

    for path in write_generated(Path(args.out) if args.out else GENERATED_DIR):
        print(path)
    return 0
