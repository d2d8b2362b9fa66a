"""``exo bench NAME [ARGS...]``: run one benchmark by name.

A benchmark is a module with ``main(argv) -> int`` (its own arguments, ``--json``
among them). The registry below maps names to modules; add a line for a new one
(``retrieval`` is expected from the retrieval work). Only argparse loads here.
"""

from __future__ import annotations

import argparse

# name -> module with main(argv); a module missing from this tree is reported, not offered silently.
BENCHMARKS: dict[str, str] = {
    "footprint": "exo_edge.footprint",
}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``exo bench``."""
    parser = sub.add_parser("bench", help=f"run a benchmark ({', '.join(BENCHMARKS)}); NAME --help for its options")
    parser.add_argument("name", choices=sorted(BENCHMARKS), metavar="NAME", help=", ".join(sorted(BENCHMARKS)))
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark's own arguments (e.g. --json)")
    parser.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    import importlib

    from exo_core.errors import UnsupportedError

    try:
        module = importlib.import_module(BENCHMARKS[args.name])
    except ImportError as exc:
        raise UnsupportedError(f"benchmark {args.name!r} needs {BENCHMARKS[args.name]}, which is not installed") from exc
    return int(module.main(args.args))
