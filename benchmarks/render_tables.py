"""Render docs/benchmarks.md's results tables from ``benchmarks/results/<name>.json`` .

A table stands between two marker comments in the page, ``<!-- results:NAME -->`` and
``<!-- /results:NAME -->``, and is rebuilt from the results files ``RENDERERS[NAME]`` names, so the
numbers in the docs are the numbers a run wrote. Run::

    python -m benchmarks.render_tables            # rewrite the tables in docs/benchmarks.md
    python -m benchmarks.render_tables --check    # exit 1 when a table differs from its results

``--results DIR`` and ``--doc FILE`` point it at other files (the test does). The renderers are in
``benchmarks/tables/``, one function per table, registered in ``RENDERERS``; a table without markers
is written by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from benchmarks.tables import RENDERERS

REPO = Path(__file__).resolve().parent.parent


DOC = REPO / "docs" / "benchmarks.md"
RESULTS_DIR = REPO / "benchmarks" / "results"
_OPENING = re.compile(r"<!-- results:([a-z0-9_.-]+) -->")  # table names are lower case

__all__ = ["RENDERERS", "render_doc", "stale_tables", "main"]


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- results:{name} -->", f"<!-- /results:{name} -->"


def _load(results_dir: Path, file: str, cache: dict[str, Any]) -> Any:
    if file not in cache:
        cache[file] = json.loads((results_dir / f"{file}.json").read_text(encoding="utf-8"))
    return cache[file]


def render_doc(text: str, results_dir: Path) -> str:
    """The page with every marked table rebuilt from its results files.

    A registered table without exactly one pair of markers, or markers naming no registered table, is
    an error (ValueError): a table must not quietly fall back to being written by hand.
    """
    unknown = sorted(set(_OPENING.findall(text)) - set(RENDERERS))
    if unknown:
        raise ValueError(f"the page marks tables no renderer knows: {unknown}; add them to RENDERERS")
    loaded: dict[str, Any] = {}
    for name, table in RENDERERS.items():
        start, end = _markers(name)
        if text.count(start) != 1 or text.count(end) != 1:
            raise ValueError(f"the page needs exactly one {start} ... {end} pair around the {name} table")
        head, rest = text.split(start)
        _old, tail = rest.split(end)
        datas = [_load(results_dir, file, loaded) for file in table.files]
        rendered = "\n".join(table.render(*datas))
        text = f"{head}{start}\n{rendered}\n{end}{tail}"
    return text


def _block(text: str, name: str) -> str:
    start, end = _markers(name)
    return text.split(start)[1].split(end)[0]


def stale_tables(text: str, rendered: str) -> list[str]:
    """The names of the tables whose text in the page differs from what their results files render."""
    return [name for name in RENDERERS if _block(text, name) != _block(rendered, name)]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the page's tables, or with ``--check`` report the ones that differ from the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table differs")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, metavar="DIR", help="the results files")
    parser.add_argument("--doc", type=Path, default=DOC, metavar="FILE", help="the page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    current = args.doc.read_text(encoding="utf-8")
    rendered = render_doc(current, args.results)
    if rendered == current:
        return 0
    if args.check:
        names = ", ".join(stale_tables(current, rendered))
        print(f"{args.doc}: tables that differ from {args.results}: {names}; run python -m benchmarks.render_tables")
        return 1
    args.doc.write_text(rendered, encoding="utf-8")
    print(f"rewrote the results tables in {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
