"""``exo protocol export``: write the generated JSON Schema and TypeScript types."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo protocol``."""
    parser = sub.add_parser("protocol", help="protocol tools")
    psub = parser.add_subparsers(dest="protocol_command", metavar="ACTION")
    psub.required = True
    export = psub.add_parser("export", help="write JSON Schema and TypeScript types")
    export.add_argument("--out", default=None, help="directory (default: exo_core/protocol/generated)")
    export.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from exo_core.protocol.schema import GENERATED_DIR, write_generated

    for path in write_generated(Path(args.out) if args.out else GENERATED_DIR):
        print(path)
    return 0
